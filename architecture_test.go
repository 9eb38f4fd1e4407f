package main

import (
	"bufio"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "mailbolt"

// allowlist reads the table of docs/architecture.md: each package of ours
// (a path relative to the module, "." for main, or a pattern ending in /*)
// with the patterns of ours it may import.
func allowlist(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules := map[string][]string{}
	code := regexp.MustCompile("`([^`]+)`")
	inTable := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "| package | may import") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if len(rules) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 2 {
			t.Fatalf("docs/architecture.md: table row %q has %d cells, want 2", line, len(cells))
		}
		var allowed []string
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			allowed = append(allowed, m[1])
		}
		if strings.Contains(cells[1], "everything") {
			allowed = append(allowed, "*")
		}
		for _, m := range code.FindAllStringSubmatch(cells[0], -1) {
			rules[m[1]] = allowed
		}
	}
	if len(rules) == 0 {
		t.Fatal("docs/architecture.md has no '| package | may import' table")
	}
	return rules
}

// matches tells whether a package (relative to the module) fits a pattern
// of the table: an exact path, "dir/*" for the packages below dir, or "*".
func matches(pattern, pkg string) bool {
	if pattern == "*" || pattern == pkg {
		return true
	}
	if dir, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(pkg, dir+"/")
	}
	return false
}

func rel(importPath string) string {
	if importPath == module {
		return "."
	}
	return strings.TrimPrefix(importPath, module+"/")
}

// TestImportGraph holds every package of ours to its row of the table:
// a package without a row, or an import of ours the row does not allow,
// fails. Only production code counts; tests may use any package.
func TestImportGraph(t *testing.T) {
	rules := allowlist(t)
	// -pgo=off: with default.pgo, go list names the main package's
	// profile-built variant of each dependency "path [mailbolt]".
	out, err := exec.Command("go", "list", "-pgo=off", "-deps", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		if pkg != module && !strings.HasPrefix(pkg, module+"/") {
			continue
		}
		checked++
		var allowed []string
		found := false
		for pattern, a := range rules {
			if matches(pattern, rel(pkg)) {
				allowed, found = append(allowed, a...), true
			}
		}
		if !found {
			t.Errorf("%s has no row in docs/architecture.md's table: add one saying what it may import", rel(pkg))
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if !slices.ContainsFunc(allowed, func(p string) bool { return matches(p, rel(imp)) }) {
				t.Errorf("%s imports %s, which its row in docs/architecture.md does not allow", rel(pkg), rel(imp))
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages of ours listed", checked)
	}
}

// testHelpers are packages for tests; of production code, only the bench
// command's files may use them.
var testHelpers = []string{module + "/mta/smtptest", module + "/mta/dns/dnstest", module + "/tlsconf/tlstest", module + "/storage/pgtest", module + "/storage/storagetest"}

func TestHelpersStayInTests(t *testing.T) {
	for _, h := range testHelpers {
		if _, err := os.Stat(strings.TrimPrefix(h, module+"/")); err != nil {
			t.Fatalf("test helper %s: %v", h, err)
		}
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "clients") && p != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		if filepath.Dir(p) == "." && strings.HasPrefix(filepath.Base(p), "cli_bench") {
			return nil
		}
		if slices.ContainsFunc(testHelpers, func(h string) bool { return strings.HasPrefix(filepath.ToSlash(p), rel(h)+"/") }) {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if slices.Contains(testHelpers, ip) {
				t.Errorf("%s imports the test helper %s; only tests and the bench command may", p, ip)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadmeListsEveryPackage holds README.md's "What is here" table to
// the tree: every directory holding Go files has its row.
func TestReadmeListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	err = filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "clients") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && filepath.Dir(p) != "." {
			dirs[path.Clean(filepath.ToSlash(filepath.Dir(p)))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range dirs {
		if !strings.Contains(string(readme), "| `"+dir+"/`") {
			t.Errorf("README.md's \"What is here\" table has no row for %s/", dir)
		}
	}
}

// TestReadmeStatesTheEnforcedGraph: the dependency line of README.md is
// the one docs/architecture.md gives above its table.
func TestReadmeStatesTheEnforcedGraph(t *testing.T) {
	arch, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile("(?m)^`(storage ← [^`]+)`$").FindSubmatch(arch)
	if line == nil {
		t.Fatal("docs/architecture.md states no dependency line such as `storage ← … ← main`")
	}
	if !strings.Contains(string(readme), "`"+string(line[1])+"`") {
		t.Errorf("README.md does not state the dependency line of docs/architecture.md: %s", line[1])
	}
}

// TestArchitectureNamesRealFiles: every Go file and package directory
// docs/architecture.md names in backquotes exists, so the walkthrough
// cannot drift from the tree unnoticed.
func TestArchitectureNamesRealFiles(t *testing.T) {
	arch, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`((?:[a-z_]+/)*[a-z_]+\\.go)`|`([a-z]+(?:/[a-z]+)+)`").FindAllSubmatch(arch, -1)
	if len(named) < 20 {
		t.Fatalf("docs/architecture.md names only %d files and packages", len(named))
	}
	bases := map[string]bool{} // file names, for those named beside their package
	err = filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			bases[d.Name()] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range named {
		p := string(m[1]) + string(m[2])
		if !strings.Contains(p, "/") {
			if !bases[p] {
				t.Errorf("docs/architecture.md names %s, which no directory holds", p)
			}
			continue
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("docs/architecture.md names %s, which does not exist", p)
		}
	}
}

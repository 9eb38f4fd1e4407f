package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestErrorCodesAreOneTable holds every Code* constant of the package to
// ErrorCodes, so a code can be produced only with the status the table
// gives it.
func TestErrorCodesAreOneTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Code") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					consts[id.Name] = v
					if name != "errors.go" {
						t.Errorf("%s: error code %s is declared outside errors.go", name, id.Name)
					}
				}
			}
			return true
		})
	}
	seen := map[string]bool{}
	for _, c := range ErrorCodes {
		if seen[c.Code] {
			t.Errorf("%s is twice in ErrorCodes", c.Code)
		}
		seen[c.Code] = true
		if c.Status < 400 || c.Status > 599 || c.Summary == "" {
			t.Errorf("ErrorCodes row %+v", c)
		}
	}
	for name, v := range consts {
		if !seen[v] {
			t.Errorf("%s = %q is not in ErrorCodes", name, v)
		}
	}
	if len(consts) != len(ErrorCodes) {
		t.Errorf("%d Code constants, %d rows in ErrorCodes", len(consts), len(ErrorCodes))
	}
}

// TestErrorCodesDocumented holds docs/errors.md to the table: every code
// with its status, and no code the server never answers with.
func TestErrorCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (\\d{3}) \\| `([A-Z_]+)` \\|")
	documented := map[string][]int{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		status, _ := strconv.Atoi(m[1])
		documented[m[2]] = append(documented[m[2]], status)
	}
	for _, c := range ErrorCodes {
		statuses, ok := documented[c.Code]
		if !ok {
			t.Errorf("docs/errors.md lacks %s (%d)", c.Code, c.Status)
			continue
		}
		for _, s := range statuses {
			if s != c.Status {
				t.Errorf("docs/errors.md gives %s status %d, the code answers %d", c.Code, s, c.Status)
			}
		}
	}
	for code := range documented {
		if !slices.ContainsFunc(ErrorCodes, func(c ErrorCode) bool { return c.Code == code }) {
			t.Errorf("docs/errors.md documents %s, which the server never answers with", code)
		}
	}
}

func TestNewErrorTakesStatusFromTable(t *testing.T) {
	if s := NewError(CodeGone, "x").Status(); s != 410 {
		t.Errorf("GONE status %d", s)
	}
	if s := (&Error{Code: "SOMETHING_NEWER"}).Status(); s != 500 {
		t.Errorf("unknown code status %d, want 500", s)
	}
	defer func() {
		if recover() == nil {
			t.Error("NewError accepted a code outside the table")
		}
	}()
	NewError("NOT_A_CODE", "x")
}

func TestWithinPlacesFieldAndMessage(t *testing.T) {
	e := Validation("to[1]", "must be an address").Within("messages[2].")
	if e.Details["field"] != "messages[2].to[1]" || e.Message != "messages[2].to[1]: must be an address" {
		t.Errorf("validation: %q %v", e.Message, e.Details)
	}
	// A message that does not start with its field gets the field in front.
	e = NewError(CodeInvalidTemplate, "the html template does not parse: line 2: x").With("field", "html").Within("messages[0].")
	if e.Details["field"] != "messages[0].html" || e.Message != "messages[0].html: the html template does not parse: line 2: x" {
		t.Errorf("template: %q %v", e.Message, e.Details)
	}
	// No field: nothing to place.
	e = NewError(CodeDomainNotVerified, "no").With("domain", "a.test").Within("messages[0].")
	if e.Message != "no" || e.Details["field"] != nil {
		t.Errorf("no field: %q %v", e.Message, e.Details)
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/dns/dnstest"
	"mailbolt/mta/smtptest"
)

// TestDocsShellBlocks runs every ```sh block of docs/*.md, so that the
// examples keep working as the code changes.
//
// Each file runs in one bash process (set -euo pipefail) against a fresh
// `mailbolt serve` of its own, its blocks in order, so a variable one block
// sets (an id taken with jq) is seen by the next. The shell starts with:
//
//   - PATH led by a freshly built `mailbolt`, and MAILBOLT_DATA_DIR and
//     MAILBOLT_HTTP_ADDR naming that server, so CLI commands reach it;
//   - API (the base URL, http://127.0.0.1:PORT), KEY and TEST_KEY (the live
//     and test keys printed at first start) and METRICS (the metrics URL): the
//     conventions docs/README.md states;
//   - curl wrapped to add --fail-with-body, so an example whose request is
//     answered 4xx or 5xx fails here although `curl -s` would exit 0.
//
// The server resolves names through a dnstest zone that holds nothing and
// relays its outgoing mail to an smtptest sink: nothing leaves the machine.
//
// A block whose lines start with "$ " is a transcript: only those lines
// (without "$ ", with their "\" continuation lines) run; the others are the
// output shown to the reader. A block preceded by the line
// `<!-- docs-test: skip: reason -->` does not run; that is only for blocks
// that cannot run here (external hosts, systemctl, docker, over 60 s).
func TestDocsShellBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the documentation's examples")
	}
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the docs test needs %s (.ci/run installs jq): %v", tool, err)
		}
	}
	files, err := filepath.Glob("docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	sort.Strings(files)

	binDir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "mailbolt"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	zone := dnstest.Start(t)
	sink, err := smtptest.Start("127.0.0.1:0", smtptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })

	ran, skipped := 0, 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		blocks := shellBlocks(string(src))
		if len(blocks) == 0 {
			continue
		}
		for _, b := range blocks {
			if b.skip == "" {
				ran++
			} else {
				skipped++
			}
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			runDocBlocks(t, file, blocks, binDir, zone.Addr, sink.Addr)
		})
	}
	t.Logf("docs: %d shell blocks run, %d skipped", ran, skipped)
}

// docBlock is one ```sh block: its first line's number in the file, its
// commands, and the reason it is skipped, if it is.
type docBlock struct {
	line   int
	script string
	skip   string
}

var skipMarkRe = regexp.MustCompile(`^<!--\s*docs-test:\s*skip:\s*(.+?)\s*-->$`)

// shellBlocks returns the ```sh blocks of a Markdown file.
func shellBlocks(src string) []docBlock {
	var blocks []docBlock
	lines := strings.Split(src, "\n")
	prev := "" // the last non-blank line before a fence
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") {
			if fence != "" {
				prev = fence
			}
			continue
		}
		tag := strings.TrimPrefix(fence, "```")
		start := i + 1
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if tag == "sh" {
			b := docBlock{line: start + 1, script: transcriptCommands(body)}
			if m := skipMarkRe.FindStringSubmatch(prev); m != nil {
				b.skip = m[1]
			}
			blocks = append(blocks, b)
		}
		prev = ""
	}
	return blocks
}

// transcriptCommands returns a block's script: the block itself, or, when it
// is a transcript, only its "$ " lines and their continuations.
func transcriptCommands(body []string) string {
	transcript := false
	for _, l := range body {
		if strings.HasPrefix(l, "$ ") {
			transcript = true
		}
	}
	if !transcript {
		return strings.Join(body, "\n") + "\n"
	}
	var b strings.Builder
	cont := false
	for _, l := range body {
		switch {
		case strings.HasPrefix(l, "$ "):
			b.WriteString(strings.TrimPrefix(l, "$ ") + "\n")
		case cont:
			b.WriteString(l + "\n")
		default:
			continue
		}
		cont = strings.HasSuffix(l, "\\")
	}
	return b.String()
}

const docsBlockMark = "### docs-test block at line "

// runDocBlocks starts a server for one file, runs its blocks in one shell
// on it.
func runDocBlocks(t *testing.T, file string, blocks []docBlock, binDir, dnsAddr, relay string) {
	var script strings.Builder
	script.WriteString("set -euo pipefail\ncurl() { command curl --fail-with-body \"$@\"; }\n")
	n := 0
	for _, b := range blocks {
		if b.skip != "" {
			t.Logf("%s:%d skipped: %s", file, b.line, b.skip)
			continue
		}
		n++
		fmt.Fprintf(&script, "echo '%s%d'\n%s\n", docsBlockMark, b.line, b.script)
	}
	script.WriteString("echo '" + docsBlockMark + "end'\n")
	if n == 0 {
		return
	}

	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	srv := exec.CommandContext(ctx, filepath.Join(binDir, "mailbolt"), "serve", "--data-dir", data,
		"--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
		"--dns-server", dnsAddr, "--relay", relay, "--hostname", "mta.example.net", "--dev")
	srv.Env = append(os.Environ(), "MAILBOLT_DATA_DIR=") // only the flags configure it
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
	}()
	var api, key, testKey, metrics string
	lines := bufio.NewScanner(stdout)
	timer := time.AfterFunc(20*time.Second, func() { srv.Process.Kill() })
	for metrics == "" && lines.Scan() {
		l := lines.Text()
		if m := liveKeyRe.FindStringSubmatch(l); m != nil {
			key = m[1]
		}
		if m := testKeyRe.FindStringSubmatch(l); m != nil {
			testKey = m[1]
		}
		if m := listenRe.FindStringSubmatch(l); m != nil {
			api = m[1]
		}
		if m := metricsRe.FindStringSubmatch(l); m != nil {
			metrics = strings.TrimSuffix(m[1], "/metrics")
		}
	}
	timer.Stop()
	go io.Copy(io.Discard, stdout)
	if api == "" || key == "" || testKey == "" || metrics == "" {
		t.Fatalf("serve printed no address, keys or metrics address; stderr:\n%s", stderr.String())
	}

	sh := exec.CommandContext(ctx, "bash", "-c", script.String())
	sh.Dir = dir
	sh.Env = append(os.Environ(),
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+dir,
		"MAILBOLT_DATA_DIR="+data,
		"MAILBOLT_HTTP_ADDR="+strings.TrimPrefix(api, "http://"),
		"API="+api, "KEY="+key, "TEST_KEY="+testKey, "METRICS="+metrics,
	)
	var out bytes.Buffer
	sh.Stdout = &out
	sh.Stderr = &out
	start := time.Now()
	err = sh.Run()
	t.Logf("%s: %d blocks in %s", file, n, time.Since(start).Round(time.Millisecond))
	if err == nil {
		return
	}
	// The failing block is the last one whose mark was printed.
	all := out.String()
	at := strings.LastIndex(all, docsBlockMark)
	if at < 0 {
		t.Fatalf("%s: shell failed before the first block: %v\n%s", file, err, all)
	}
	rest := all[at+len(docsBlockMark):]
	line, output, _ := strings.Cut(rest, "\n")
	t.Fatalf("%s:%s: block failed: %v\n%s\nserver stderr:\n%s", file, line, err, output, lastLines(stderr.String(), 20))
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

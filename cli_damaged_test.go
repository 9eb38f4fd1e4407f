package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mailbolt/storage"
)

// TestDamagedDatabaseIsOneClearLine: serve and the management commands on
// an empty or garbled mailbolt.db fail with one line that names the file
// and the restore command, never a panic, and an empty file is not taken
// for a first start.
func TestDamagedDatabaseIsOneClearLine(t *testing.T) {
	good := t.TempDir()
	mustRun(t, "accounts", "create", "--name", "acme", "--data-dir", good)
	raw, err := os.ReadFile(filepath.Join(good, storage.FileName))
	if err != nil {
		t.Fatal(err)
	}
	garbled := append([]byte(nil), raw...)
	for i := 2 * os.Getpagesize(); i < len(garbled); i++ {
		garbled[i] = byte(i*7 + 13)
	}
	for name, b := range map[string][]byte{"empty": {}, "truncated": raw[:5000], "garbled": garbled} {
		for _, args := range [][]string{
			{"serve", "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0"},
			{"accounts", "list"},
			{"accounts", "create", "--name", "x"},
			{"backup", "--out", filepath.Join(t.TempDir(), "b.db")},
		} {
			dir := t.TempDir()
			path := filepath.Join(dir, storage.FileName)
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := run(t, append(args, "--data-dir", dir)...)
			if err == nil {
				t.Errorf("%s: %v succeeded:\n%s", name, args, out)
				continue
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, "mailbolt restore --from") || strings.Contains(msg, "\n") {
				t.Errorf("%s: %v: %q", name, args, msg)
			}
			if strings.Contains(out, "live key") {
				t.Errorf("%s: %v took the file for a first start:\n%s", name, args, out)
			}
		}
	}
}

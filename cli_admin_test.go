package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// `mailbolt backup --out` into a directory that does not exist names the
// directory, whether serve runs (the socket answers) or not.
func TestBackupIntoAMissingDirectoryNamesIt(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "missing", "dir")
	check := func(when string) {
		t.Helper()
		out, err := run(t, "backup", "--out", filepath.Join(missing, "x.db"), "--data-dir", dir)
		if err == nil || !strings.Contains(err.Error(), "the directory "+missing+" does not exist") || strings.Contains(err.Error(), "INTERNAL") {
			t.Errorf("%s: %v\n%s", when, err, out)
		}
	}
	_, _, stop := startServe(t, dir)
	check("while serve runs")
	stop()
	check("with serve stopped")
}

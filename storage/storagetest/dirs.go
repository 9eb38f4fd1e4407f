package storagetest

import (
	"os"
	"path/filepath"
	"testing"
)

// UnwritableDir is a new directory this process cannot create files in,
// for tests of what a failed write says. Where permissions do not bind the
// process (root, as in CI) the test is skipped.
func UnwritableDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.Chmod(dir, 0o755) })
	if f, err := os.CreateTemp(dir, "probe"); err == nil {
		f.Close()
		tb.Skip("this process writes to a directory of mode 0555 (root): permissions cannot fail here")
	}
	return dir
}

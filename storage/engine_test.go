package storage

import (
	"os"
	"path/filepath"
	"testing"

	"mailbolt/storage/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testOptions are DefaultOptions on the engine the run is for: with
// MAILBOLT_TEST_DATABASE=postgres every openTest database is a fresh
// PostgreSQL one (the CI runs the suite both ways).
func testOptions(t testing.TB) Options {
	t.Helper()
	o := DefaultOptions()
	if o.Database = pgtest.FromEnv(t); o.Database != "" {
		o.SecretKeyFile = filepath.Join(t.TempDir(), "secret.key")
		if err := WriteNewSecretKey(o.SecretKeyFile); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

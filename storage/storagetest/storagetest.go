// Package storagetest gives the suites above storage (app, web, hooks,
// mta/queue…) the database options of the engine the run is for: the
// embedded file by default, or with MAILBOLT_TEST_DATABASE=postgres a
// fresh database on pgtest's shared PostgreSQL server, so the same tests
// run once on each engine (.ci/run does both).
//
// A package that uses it needs TestMain to run pgtest.Main:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// Tests about the embedded file itself (its lock, backup and restore,
// damage, compaction) keep opening it with storage.DefaultOptions.
package storagetest

import (
	"os"
	"path/filepath"
	"testing"

	"mailbolt/storage"
	"mailbolt/storage/pgtest"
)

// Options are storage.DefaultOptions on the run's engine. On PostgreSQL,
// Database is a new database dropped when tb ends, and SecretKeyFile a
// key made for it in a temporary directory (that engine never creates
// its key file); the data directory given to storage.Open then holds
// nothing of the database.
func Options(tb testing.TB) storage.Options {
	tb.Helper()
	o := storage.DefaultOptions()
	if o.Database = pgtest.FromEnv(tb); o.Database != "" {
		o.SecretKeyFile = filepath.Join(tb.TempDir(), storage.SecretKeyFileName)
		if err := storage.WriteNewSecretKey(o.SecretKeyFile); err != nil {
			tb.Fatal(err)
		}
	}
	return o
}

// Postgres reports whether the run is on PostgreSQL
// (MAILBOLT_TEST_DATABASE=postgres).
func Postgres() bool { return os.Getenv(pgtest.EnvVar) == "postgres" }

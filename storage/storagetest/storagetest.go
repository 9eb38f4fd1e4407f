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
		o.SecretKeyFile = newKeyFile(tb)
	}
	return o
}

// PostgresOptions are storage.DefaultOptions on a fresh database of
// pgtest's shared PostgreSQL server, dropped when tb ends, with a key file
// made for it, whatever engine the run is for: the tests about several
// nodes sharing one database. Without PostgreSQL the test is skipped.
func PostgresOptions(tb testing.TB) storage.Options {
	tb.Helper()
	o := storage.DefaultOptions()
	o.Database = pgtest.Shared(tb).NewDatabase(tb)
	o.SecretKeyFile = newKeyFile(tb)
	return o
}

// Nodes opens n handles on one fresh PostgreSQL database
// (PostgresOptions), each with a data directory of its own and closed
// when tb ends: n `serve` nodes sharing a database. Without PostgreSQL
// the test is skipped.
func Nodes(tb testing.TB, n int) []*storage.DB {
	tb.Helper()
	o := PostgresOptions(tb)
	out := make([]*storage.DB, 0, n)
	for range n {
		db, err := storage.Open(tb.TempDir(), o)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		out = append(out, db)
	}
	return out
}

// newKeyFile writes a new secret key in a temporary directory of tb's and
// returns its path.
func newKeyFile(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), storage.SecretKeyFileName)
	if err := storage.WriteNewSecretKey(path); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Postgres reports whether the run is on PostgreSQL
// (MAILBOLT_TEST_DATABASE=postgres).
func Postgres() bool { return os.Getenv(pgtest.EnvVar) == "postgres" }

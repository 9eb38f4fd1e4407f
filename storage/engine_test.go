package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// testOptions are DefaultOptions on the engine the run is for: with
// MAILBOLT_TEST_DATABASE=postgres every openTest database is a fresh
// PostgreSQL one (the CI runs the suite both ways).
func testOptions(t testing.TB) Options {
	t.Helper()
	o := DefaultOptions()
	if os.Getenv("MAILBOLT_TEST_DATABASE") != "" {
		o.Database = newTestPostgres(t)
		o.SecretKeyFile = filepath.Join(t.TempDir(), "secret.key")
		if err := writeKeyFile(o.SecretKeyFile, newKey()); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

var testDBs atomic.Int64

func newTestPostgres(t testing.TB) string {
	admin := os.Getenv("MAILBOLT_TEST_DATABASE")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), testDBs.Add(1))
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return "postgres://postgres@127.0.0.1:55432/" + name + "?sslmode=disable"
}

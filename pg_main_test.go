package main

import (
	"os"
	"testing"

	"mailbolt/storage/pgtest"
)

// TestMain runs the tests through pgtest.Main, which stops the PostgreSQL
// server that pgtest.Shared starts for the tests that need one.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

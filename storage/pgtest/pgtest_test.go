package pgtest

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Two databases of one server are independent, and a dropped one is
// gone even while a connection to it is still open.
func TestNewDatabaseIsolation(t *testing.T) {
	srv := Shared(t)
	ctx := context.Background()

	var urlA string
	t.Run("a", func(t *testing.T) {
		urlA = srv.NewDatabase(t)
		a := connect(t, urlA)
		if _, err := a.Exec(ctx, "CREATE TABLE things (id int PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Exec(ctx, "INSERT INTO things VALUES (1)"); err != nil {
			t.Fatal(err)
		}

		urlB := srv.NewDatabase(t)
		if urlB == urlA {
			t.Fatalf("two databases with one URL %s", urlA)
		}
		b := connect(t, urlB)
		_, err := b.Exec(ctx, "SELECT * FROM things")
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42P01" { // undefined_table
			t.Fatalf("table of database a seen from database b: %v", err)
		}
		var n int
		if err := a.QueryRow(ctx, "SELECT count(*) FROM things").Scan(&n); err != nil || n != 1 {
			t.Fatalf("count in a = %d, %v", n, err)
		}
	})
	// The subtest's cleanup dropped its databases (their connections
	// were closed first, but WITH (FORCE) does not need that).
	admin := connect(t, srv.URL("postgres"))
	var exists bool
	u, err := url.Parse(urlA)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)",
		strings.TrimPrefix(u.Path, "/")).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("database of %s still exists after its test ended", urlA)
	}
}

// A database is dropped at the end of its test even with a connection
// still open to it.
func TestDropWithOpenConnection(t *testing.T) {
	srv := Shared(t)
	var conn *pgx.Conn
	t.Run("open", func(t *testing.T) {
		url := srv.NewDatabase(t)
		var err error
		conn, err = pgx.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
	})
	defer conn.Close(context.Background())
	if err := conn.Ping(context.Background()); err == nil {
		t.Fatal("connection to a dropped database still answers")
	}
}

// Start runs a server of the test's own, with its own port and files,
// gone after the test.
func TestStart(t *testing.T) {
	var dir string
	t.Run("own", func(t *testing.T) {
		srv := Start(t)
		if srv.Port() == Shared(t).Port() {
			t.Fatalf("own server on the shared server's port %d", srv.Port())
		}
		dir = srv.dir
		var one int
		if err := connect(t, srv.NewDatabase(t)).QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("SELECT 1 = %d, %v", one, err)
		}
	})
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("server directory %s after Stop: %v", dir, err)
	}
}

func TestAvailable(t *testing.T) {
	dir, err := Available()
	if err != nil {
		t.Skip(err)
	}
	for _, bin := range []string{"initdb", "postgres"} {
		if !executable(dir + "/" + bin) {
			t.Errorf("%s has no %s", dir, bin)
		}
	}
}

// Databases made ahead (every NewDatabase after the first) are empty and
// named after the test that takes them, like those made on the spot.
func TestDatabasesMadeAheadAreNamedAndEmpty(t *testing.T) {
	srv := Shared(t)
	ctx := context.Background()
	for i := range 3 {
		c := connect(t, srv.NewDatabase(t))
		var name string
		var tables int
		if err := c.QueryRow(ctx, "SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')").
			Scan(&name, &tables); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(name, "_testdatabasesmadeaheadarenamedandempty") || tables != 0 {
			t.Fatalf("database %d: %s with %d tables", i, name, tables)
		}
		if _, err := c.Exec(ctx, "CREATE TABLE things (id int)"); err != nil {
			t.Fatal(err)
		}
	}
}

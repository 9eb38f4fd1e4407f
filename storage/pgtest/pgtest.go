// Package pgtest runs a real PostgreSQL server on loopback for tests: the
// Debian `postgresql` binaries (found through `pg_config --bindir` or
// /usr/lib/postgresql/*/bin, never through $PATH), a cluster made by
// initdb in a temporary directory, listening on 127.0.0.1 on a free port
// with trust authentication for the superuser `postgres`. Each test gets
// its own empty database from NewDatabase.
//
// The server is tuned for tests, not for keeping data: fsync,
// synchronous_commit and full_page_writes are off, so a crash of the
// machine may lose or corrupt what it holds. Nothing here is for
// production.
//
// When the binaries are absent, Start and Shared skip the test (`.ci/run`
// installs them). When the tests run as root, initdb and postgres run as
// the `postgres` system user, which refuses to run as root.
//
// A test binary that is killed does not leave the server running: on
// Linux postgres gets SIGINT (fast shutdown) when the thread that started
// it dies, which happens when the test process dies however it dies. Its
// temporary directory (mailbolt-pgtest-* under os.TempDir()) stays behind
// in that case.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoServer is what Available returns when no PostgreSQL server
// binaries are installed; Start and Shared skip the test then.
var ErrNoServer = errors.New("PostgreSQL server binaries not found (apt-get install postgresql); .ci/run installs them")

// startTimeout bounds initdb plus the wait for the server to accept
// connections; generous, for a loaded machine.
const startTimeout = 90 * time.Second

// Available returns the directory holding initdb and postgres: the one
// `pg_config --bindir` names when it holds both, else the newest
// /usr/lib/postgresql/<version>/bin that does. $PATH is not searched for
// them: a stray initdb there may belong to another installation.
func Available() (bindir string, err error) {
	var candidates []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return int(version(b)*100) - int(version(a)*100) })
	candidates = append(candidates, dirs...)
	for _, dir := range candidates {
		if executable(filepath.Join(dir, "initdb")) && executable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", ErrNoServer
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Server is one running PostgreSQL cluster.
type Server struct {
	bindir string
	dir    string // the temporary directory: data/, server.log, the socket
	port   int
	cred   *ids // the postgres user when we are root; nil otherwise
	cmd    *exec.Cmd
	exited chan struct{} // closed when postgres has exited
	err    error         // postgres's exit status, set before exited closes

	mu    sync.Mutex // guards admin, n, ahead and stopping
	admin *pgx.Conn
	n     int
	stop  sync.Once

	// ahead yields the name of the database being made ahead for the next
	// NewDatabase once CREATE DATABASE returns ("" when it failed); nil
	// when none is being made. Creating a database (copying template1)
	// is most of what a short test on it costs; made while the previous
	// test runs, it costs that test's wait only a rename.
	ahead    chan string
	stopping bool
	making   sync.WaitGroup
}

// Start runs a new server for this test and stops it, removing its
// files, when the test ends. It skips the test when the binaries are
// absent. Prefer Shared, which starts one per test binary.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := start()
	if errors.Is(err, ErrNoServer) {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

var shared struct {
	sync.Mutex
	inMain bool
	once   sync.Once
	s      *Server
	err    error
}

// Shared returns the server of this test binary, starting it on first
// use. The package's TestMain must run the tests through Main, which
// stops it: Shared fails the test otherwise. It skips the test when the
// binaries are absent.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	shared.Lock()
	inMain := shared.inMain
	shared.Unlock()
	if !inMain {
		tb.Fatal("pgtest.Shared needs the package's TestMain to be: func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }")
	}
	shared.once.Do(func() { shared.s, shared.err = start() })
	if errors.Is(shared.err, ErrNoServer) {
		tb.Skip(shared.err)
	}
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.s
}

// Main runs the tests and then stops the shared server if they started
// it. Use it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	shared.Lock()
	shared.inMain = true
	shared.Unlock()
	code := m.Run()
	if shared.s != nil {
		if err := shared.s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

func start() (*Server, error) {
	bindir, err := Available()
	if err != nil {
		return nil, err
	}
	s := &Server{bindir: bindir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pgtest: running as root, so PostgreSQL must run as the postgres system user: %w", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		s.cred = &ids{uid: uint32(uid), gid: uint32(gid)}
	}
	// Under os.TempDir() rather than a test's TempDir: the postgres user
	// must reach it, and /tmp is world-traversable where a test's parent
	// directories may not be. The path stays short for the socket.
	s.dir, err = os.MkdirTemp("", "mailbolt-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.uid), int(s.cred.gid)); err != nil {
			os.RemoveAll(s.dir)
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.initdb(ctx); err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	// The port is free when we look and may be taken before postgres
	// binds it (other test binaries pick ports too): try a few.
	for attempt := 0; ; attempt++ {
		err = s.run(ctx)
		if err == nil {
			return s, nil
		}
		s.shutdown()
		if attempt == 4 || !strings.Contains(s.logTail(), "could not bind") {
			os.RemoveAll(s.dir)
			return nil, err
		}
	}
}

// ids are the user and group a command runs as.
type ids struct{ uid, gid uint32 }

func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bindir, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + s.dir, "LC_ALL=C", "LANG=C", "TZ=UTC"}
	cmd.SysProcAttr = sysProcAttr(s.cred)
	return cmd
}

func (s *Server) initdb(ctx context.Context) error {
	cmd := s.command(ctx, "initdb", "-D", filepath.Join(s.dir, "data"), "-U", "postgres",
		"-A", "trust", "--auth-local=trust", "--auth-host=trust", "--no-sync",
		"-E", "UTF8", "--locale=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, tail(out))
	}
	return nil
}

// run starts postgres on a free port and waits until it accepts
// connections.
func (s *Server) run(ctx context.Context) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, err := os.Create(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	// Not bound to ctx, which ends when start returns.
	s.cmd = s.command(context.Background(), "postgres", "-D", filepath.Join(s.dir, "data"), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(s.port),
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=64MB")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.exited = make(chan struct{})
	if err := s.startLocked(); err != nil {
		close(s.exited)
		return fmt.Errorf("pgtest: postgres: %w", err)
	}
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, s.URL("postgres"))
		cancel()
		if err == nil {
			s.admin = conn
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("pgtest: postgres exited (%v) before accepting connections; end of its log:\n%s", s.err, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres did not accept connections within %v (%v); end of its log:\n%s", startTimeout, err, s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startLocked starts postgres from a goroutine locked to its OS thread,
// which then waits for it: the parent-death signal (sysProcAttr) fires
// when the starting thread exits, so the thread must live as long as
// postgres does, which this makes true until the test process dies.
func (s *Server) startLocked() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	return <-started
}

// Stop shuts the server down (fast shutdown: SIGINT) and removes its
// files. Start's cleanup and Main call it; calling it again does nothing.
func (s *Server) Stop() error {
	var err error
	s.stop.Do(func() {
		err = s.shutdown()
		if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
			err = fmt.Errorf("pgtest: %w", rerr)
		}
	})
	return err
}

// shutdown closes the admin connection and stops postgres, waiting for
// it to exit.
func (s *Server) shutdown() error {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.making.Wait() // the database made ahead goes with the cluster
	s.mu.Lock()
	if s.admin != nil {
		s.admin.Close(context.Background())
		s.admin = nil
	}
	s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
		return nil
	case <-time.After(60 * time.Second):
	}
	killGroup(s.cmd.Process.Pid)
	<-s.exited
	return fmt.Errorf("pgtest: postgres did not stop within 60s of SIGINT; killed it; end of its log:\n%s", s.logTail())
}

// Port is the TCP port the server listens on, on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Addr is "127.0.0.1:<port>".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// BinDir is the directory of the server's binaries (pg_dump, psql…).
func (s *Server) BinDir() string { return s.bindir }

// URL is the connection URL of database dbname as the superuser
// postgres, over TCP without TLS.
func (s *Server) URL(dbname string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", s.Addr(), url.PathEscape(dbname))
}

// NewDatabase creates an empty database with a name of its own and
// returns its URL. It is dropped when the test ends, connections still
// open to it are terminated first.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("t%d_%s", s.n, dbName(tb.Name()))
	ahead := s.ahead
	s.ahead = nil
	s.mu.Unlock()
	spare := ""
	if ahead != nil {
		spare = <-ahead
	}
	s.mu.Lock()
	var err error
	if spare != "" {
		err = s.exec("ALTER DATABASE " + pgx.Identifier{spare}.Sanitize() + " RENAME TO " + pgx.Identifier{name}.Sanitize())
	} else {
		err = s.exec("CREATE DATABASE " + pgx.Identifier{name}.Sanitize())
	}
	s.mu.Unlock()
	if err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	s.makeAhead()
	tb.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.exec("DROP DATABASE " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.URL(name)
}

// makeAhead starts making the database the next NewDatabase takes,
// unless one is being made already or the server is stopping. It uses a
// connection of its own: the admin one stays free for the drops of the
// tests that end meanwhile.
func (s *Server) makeAhead() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ahead != nil || s.stopping {
		return
	}
	s.n++
	name := fmt.Sprintf("ahead%d", s.n)
	ch := make(chan string, 1)
	s.ahead = ch
	s.making.Add(1)
	go func() {
		defer s.making.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
			conn.Close(context.Background())
		}
		if err != nil {
			name = "" // NewDatabase creates its own
		}
		ch <- name
	}()
}

// exec runs one statement on the admin connection, reconnecting once if
// it was lost. s.mu is held.
func (s *Server) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if s.admin == nil || s.admin.IsClosed() {
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err != nil {
			return err
		}
		s.admin = conn
	}
	_, err := s.admin.Exec(ctx, sql)
	return err
}

// dbName is a test's name made into the rest of a database identifier:
// lower-case letters, digits and underscores, short enough for the
// 63-byte limit.
func dbName(test string) string {
	b := []byte(strings.ToLower(test))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	if len(b) > 48 {
		b = b[:48]
	}
	return string(b)
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return tail(b)
}

func tail(b []byte) string {
	const n = 3000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// EnvVar selects the engine of the storage-backed suites: set to
// "postgres", FromEnv gives each test a database on the shared server.
const EnvVar = "MAILBOLT_TEST_DATABASE"

// FromEnv is "" when EnvVar is unset (the suites use the embedded file),
// or else the URL of a new database on the shared server, dropped when tb
// ends. Packages that call it need TestMain to run Main. A run that asks
// for PostgreSQL where its binaries are absent fails rather than skips:
// every test of the suite would skip, and the run would pass having
// tested nothing.
func FromEnv(tb testing.TB) string {
	tb.Helper()
	switch v := os.Getenv(EnvVar); v {
	case "":
		return ""
	case "postgres":
		if _, err := Available(); err != nil {
			tb.Fatalf("%s=postgres: %v", EnvVar, err)
		}
		return Shared(tb).NewDatabase(tb)
	default:
		tb.Fatalf("%s=%q: the only engine it selects is postgres", EnvVar, v)
		return ""
	}
}

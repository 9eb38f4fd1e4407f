package pgtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A test binary killed with SIGKILL, which runs no cleanup, does not
// leave its server running: the server gets the parent-death signal.
func TestKilledTestBinaryStopsServer(t *testing.T) {
	if os.Getenv("PGTEST_ORPHAN_CHILD") == "1" {
		srv := Shared(t)
		fmt.Printf("server %d %s\n", srv.cmd.Process.Pid, srv.dir)
		time.Sleep(time.Minute) // killed long before
		return
	}
	if _, err := Available(); err != nil {
		t.Skip(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestKilledTestBinaryStopsServer$", "-test.count=1")
	child.Env = append(os.Environ(), "PGTEST_ORPHAN_CHILD=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var dir string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "server %d %s", &pid, &dir); err == nil {
			break
		}
	}
	child.Process.Kill()
	child.Wait()
	if pid == 0 {
		t.Fatal("the child test binary did not start a server")
	}
	if !strings.HasPrefix(filepath.Base(dir), "mailbolt-pgtest-") {
		t.Fatalf("child reported directory %q", dir)
	}
	defer os.RemoveAll(dir) // the killed binary could not remove it
	// Fast shutdown takes well under a second; the bound is for a
	// loaded machine.
	for deadline := time.Now().Add(60 * time.Second); running(pid); {
		if time.Now().After(deadline) {
			syscall.Kill(-pid, syscall.SIGKILL)
			t.Fatalf("postgres (pid %d) still running 60s after its test binary was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running says whether pid is a live process (a zombie waiting for a
// reaper counts as gone).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

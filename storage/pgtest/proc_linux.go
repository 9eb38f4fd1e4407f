package pgtest

import "syscall"

// sysProcAttr puts initdb and postgres in a process group of their own
// (a ^C in the terminal reaches the test binary, whose cleanup stops
// the server), as the postgres user when cred is set, and has the kernel
// send postgres SIGINT (fast shutdown) if the thread that started it
// dies: startLocked keeps that thread alive until postgres exits, so it
// dies only with the test process.
func sysProcAttr(cred *ids) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
	if cred != nil {
		attr.Credential = &syscall.Credential{Uid: cred.uid, Gid: cred.gid, Groups: []uint32{}}
	}
	return attr
}

// killGroup kills postgres and its backends.
func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }

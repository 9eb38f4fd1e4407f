//go:build !linux

package pgtest

import (
	"os"
	"syscall"
)

// sysProcAttr is Linux's without the parent-death signal and, for
// portability, without a change of user: elsewhere run the tests as a
// user who may run postgres.
func sysProcAttr(cred *ids) *syscall.SysProcAttr { return nil }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

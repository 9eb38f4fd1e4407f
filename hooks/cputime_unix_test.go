//go:build unix

package hooks

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used: the
// benchmark's own writes, the dispatcher, the committer and the receiver
// together. Per event it is steadier than events/s on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

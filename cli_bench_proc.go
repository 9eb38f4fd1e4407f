package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the times in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture Go runs on).
const clockTick = 10 * time.Millisecond

// procStat is what bench reads of /proc/PID/stat.
type procStat struct {
	ppid int
	own  time.Duration // utime + stime
	kids time.Duration // cutime + cstime: children it has reaped
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(b))
}

// parseProcStat reads a /proc/PID/stat line (proc(5)): the command name
// in parentheses may hold spaces, so fields are counted after the last ')'.
func parseProcStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("no command name in /proc stat line")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); ppid is field 4, utime..cstime fields 14..17.
	if len(f) < 15 {
		return procStat{}, errors.New("short /proc stat line")
	}
	var n [5]int64
	for k, idx := range []int{1, 11, 12, 13, 14} {
		v, err := strconv.ParseInt(f[idx], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("/proc stat field %d: %w", idx+3, err)
		}
		n[k] = v
	}
	return procStat{ppid: int(n[0]), own: time.Duration(n[1]+n[2]) * clockTick,
		kids: time.Duration(n[3]+n[4]) * clockTick}, nil
}

// procCPU is the CPU time, user and system, that process pid and its
// descendants have used: its own, its reaped children's, and that of the
// descendants still running. For Mailbolt, one process, that is its own;
// for Postfix's master it is the whole mail system (smtpd, cleanup, qmgr,
// smtp, ...), as long as the processes that exit are reaped by it.
func procCPU(pid int) (time.Duration, error) {
	root, err := readProcStat(pid)
	if err != nil {
		return 0, fmt.Errorf("--server-pid: %w", err)
	}
	total := root.own + root.kids
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return total, nil
	}
	stats := map[int]procStat{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		if st, err := readProcStat(p); err == nil {
			stats[p] = st
		}
	}
	var descends func(p int) bool
	descends = func(p int) bool {
		for range 64 { // a chain of parents, never a cycle in practice
			st, ok := stats[p]
			if !ok {
				return false
			}
			if st.ppid == pid {
				return true
			}
			p = st.ppid
		}
		return false
	}
	for p, st := range stats {
		if descends(p) {
			total += st.own + st.kids
		}
	}
	return total, nil
}

// loadAvg is the first three fields of /proc/loadavg, or "" where there is
// none: every figure of a shared machine is worth its load beside it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// procMemory reads the memory lines of /proc/PID/status, in MiB: VmHWM
// (peak resident), VmRSS, RssAnon (the process's own memory) and RssFile
// (mapped file pages, the database's among them).
func procMemory(pid int) map[string]float64 {
	out := map[string]float64{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
			out[name] = kb / 1024
		}
	}
	return out
}

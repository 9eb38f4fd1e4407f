package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// progressInterval is how often a progress line on a terminal is redrawn.
const progressInterval = 500 * time.Millisecond

// progress shows how long CLI work is getting on. On a terminal it
// redraws one status line in place every interval (the first after one
// interval, so quick work shows none) and clears it at the end; on
// anything else (a pipe, a file, a journal) it writes nothing until Done,
// which writes one summary line: no carriage-return spam in logs.
type progress struct {
	w        io.Writer
	tty      bool
	status   func(elapsed time.Duration) string
	start    time.Time
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	drawn    bool // a status line is on the terminal
}

// startProgress starts showing status on w, a terminal or not as
// isTerminal tells.
func startProgress(w io.Writer, status func(elapsed time.Duration) string) *progress {
	return newProgress(w, isTerminal(w), progressInterval, status)
}

func newProgress(w io.Writer, tty bool, interval time.Duration, status func(elapsed time.Duration) string) *progress {
	p := &progress{w: w, tty: tty, status: status, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	if !tty {
		close(p.done)
		return p
	}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
				// \r to the line's start, \x1b[K clears what a longer
				// line left behind.
				fmt.Fprintf(p.w, "\r%s\x1b[K", p.status(time.Since(p.start)))
				p.drawn = true
			}
		}
	}()
	return p
}

// Done stops the updates, clears the status line on a terminal, and
// writes final (when not empty) as a line of its own.
func (p *progress) Done(final string) {
	p.stopOnce.Do(func() { close(p.stop) })
	<-p.done
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
	if final != "" {
		fmt.Fprintln(p.w, final)
	}
}

// isTerminal reports whether w is a character device (a terminal).
// golang.org/x/term is not a dependency; the file mode tells the same for
// the terminals and pipes that matter here.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// formatCount writes n with thousands separators: 1,234,567.
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// formatElapsed writes d to the second: 7s, 2m05s, 1h02m03s.
func formatElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// benchStatus is bench's progress line: messages accepted and delivered
// of the total, and the rate of the phase under way.
func benchStatus(accepted, delivered int64, total int, elapsed time.Duration) string {
	rate := ""
	if secs := elapsed.Seconds(); secs > 0 {
		n := accepted
		if int(accepted) >= total {
			n = delivered
		}
		rate = fmt.Sprintf(", %s msgs/s", formatCount(int64(float64(n)/secs)))
	}
	return fmt.Sprintf("bench: %s of %s accepted, %s delivered, %s%s", formatCount(accepted), formatCount(int64(total)),
		formatCount(delivered), formatElapsed(elapsed), rate)
}

// copyStatus is the progress line of backup and restore, which copy a
// file in one call that reports no bytes as it goes: the size of what is
// copied, when known, and the time so far.
func copyStatus(verb, from, to string) func(time.Duration) string {
	size := ""
	if fi, err := os.Stat(from); err == nil {
		size = " (" + humanBytes(uint64(fi.Size())) + ")"
	}
	return func(elapsed time.Duration) string {
		return fmt.Sprintf("%s %s%s to %s, %s", verb, from, size, to, formatElapsed(elapsed))
	}
}

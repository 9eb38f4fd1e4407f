package storage

import (
	"context"
	"sync"
)

// genCheck reads mailbolt_generation for any number of callers at once:
// everyone who asks while no read is being sent shares the next one. A
// caller never gets an answer from a read sent before it asked, so the
// generation it is told was the server's at some moment after it asked:
// a cached read checked against it sees every commit made before the
// caller began (on any node).
type genCheck struct {
	read func(context.Context) (int64, error)

	mu      sync.Mutex
	next    *genRound // the round callers join now; its read is not sent yet
	running bool      // a goroutine is sending rounds
	rounds  int64     // reads sent (tests count them)
}

// genRound is one read of the generation and everyone waiting for it.
type genRound struct {
	done    chan struct{}
	gen     int64
	err     error
	callers int // (tests count them)
}

// current is the server's generation, read after the call began.
func (g *genCheck) current(ctx context.Context) (int64, error) {
	g.mu.Lock()
	if g.next == nil {
		g.next = &genRound{done: make(chan struct{})}
	}
	r := g.next
	r.callers++
	if !g.running {
		g.running = true
		go g.send()
	}
	g.mu.Unlock()
	select {
	case <-r.done:
		return r.gen, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// send reads the generation for each round in turn, until none is waiting.
func (g *genCheck) send() {
	for {
		g.mu.Lock()
		r := g.next
		g.next = nil
		if r == nil {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.rounds++
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
		r.gen, r.err = g.read(ctx)
		cancel()
		close(r.done)
	}
}

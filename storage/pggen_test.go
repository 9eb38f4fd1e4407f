package storage

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestGenCheckNeverAnswersWithAnEarlierRead: a caller that asks while a
// read is on its way waits for the next one, sent after it asked; every
// caller that asked meanwhile shares that next read.
func TestGenCheckNeverAnswersWithAnEarlierRead(t *testing.T) {
	var server int64 = 1
	var mu sync.Mutex
	started := make(chan struct{}, 10)
	release := make(chan struct{})
	g := genCheck{read: func(context.Context) (int64, error) {
		mu.Lock()
		n := server
		mu.Unlock()
		started <- struct{}{}
		<-release
		return n, nil
	}}
	first := make(chan int64)
	go func() { n, _ := g.current(context.Background()); first <- n }()
	<-started // the first read has the server at 1
	mu.Lock()
	server = 2 // a commit lands while that read is out
	mu.Unlock()
	const late = 5
	answers := make(chan int64, late)
	for range late {
		go func() {
			n, _ := g.current(context.Background())
			answers <- n
		}()
	}
	for waiting := 0; waiting < late; {
		time.Sleep(time.Millisecond)
		g.mu.Lock()
		if g.next != nil {
			waiting = g.next.callers
		}
		g.mu.Unlock()
	}
	release <- struct{}{}
	if n := <-first; n != 1 {
		t.Fatalf("first caller got %d, want 1", n)
	}
	<-started
	release <- struct{}{}
	for range late {
		if n := <-answers; n != 2 {
			t.Fatalf("a caller that asked after the commit got generation %d, want 2", n)
		}
	}
	g.mu.Lock()
	rounds := g.rounds
	g.mu.Unlock()
	if rounds != 2 {
		t.Errorf("%d reads sent for %d callers, want 2 (the late callers share one)", rounds, late+1)
	}
}

// TestGenCheckGivesUpWithItsContext: a caller whose context ends does not
// wait for a read that hangs.
func TestGenCheckGivesUpWithItsContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	g := genCheck{read: func(context.Context) (int64, error) { <-release; return 1, nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := g.current(ctx); err == nil {
		t.Fatal("current answered while its read hung")
	}
}

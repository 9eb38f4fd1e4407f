package queue

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"mailbolt/mta"
	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// slowRelay is an SMTP relay on loopback that, after reading a message's
// data, waits hold before its final 250: the window in which a shutdown
// can cut a transaction off. Every data section it reads counts as
// received, whether or not its 250 reaches the client, as it would for a
// real relay that queues before it answers.
type slowRelay struct {
	addr     string
	srv      *smtp.Server
	mu       sync.Mutex
	hold     time.Duration
	received int
	gotData  chan struct{} // one value per data section read
}

func startSlowRelay(t *testing.T, hold time.Duration) *slowRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &slowRelay{addr: ln.Addr().String(), hold: hold, gotData: make(chan struct{}, 16)}
	r.srv = smtp.NewServer(r)
	r.srv.Domain = "relay.test"
	go r.srv.Serve(ln)
	t.Cleanup(func() { r.srv.Close() })
	return r
}

func (r *slowRelay) setHold(d time.Duration) { r.mu.Lock(); r.hold = d; r.mu.Unlock() }

func (r *slowRelay) count() int { r.mu.Lock(); defer r.mu.Unlock(); return r.received }

func (r *slowRelay) NewSession(*smtp.Conn) (smtp.Session, error) { return relaySession{r}, nil }

type relaySession struct{ r *slowRelay }

func (relaySession) Mail(string, *smtp.MailOptions) error { return nil }
func (relaySession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (relaySession) Reset()                               {}
func (relaySession) Logout() error                        { return nil }
func (s relaySession) Data(rd io.Reader) error {
	if _, err := io.Copy(io.Discard, rd); err != nil {
		return err
	}
	s.r.mu.Lock()
	s.r.received++
	hold := s.r.hold
	s.r.mu.Unlock()
	s.r.gotData <- struct{}{}
	time.Sleep(hold)
	return nil
}

// liveQueue is a Queue on the real clock over the database in dir opened
// with sopts, sending through the SMTP client to relay.
func liveQueue(t *testing.T, dir string, sopts storage.Options, relay string, grace time.Duration) (*Queue, *storage.DB) {
	t.Helper()
	db, err := storage.Open(dir, sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mo := mta.DefaultOptions()
	mo.HELO, mo.Relay = "mailbolt.test", &mta.Relay{Addr: relay}
	d, err := mta.NewDeliverer(mo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	o := DefaultOptions()
	o.Sender, o.ShutdownGrace, o.ReturnPathKey = d, grace, testKey
	q, err := New(db, o)
	if err != nil {
		t.Fatal(err)
	}
	return q, db
}

// acceptLive files a live message from a verified domain to one
// recipient, now (acceptLiveAt).
func acceptLive(t *testing.T, q *Queue, db *storage.DB) storage.Message {
	t.Helper()
	return acceptLiveAt(t, q, db, time.Now().UTC())
}

// shutDownDuringData runs the queue until the relay holds the message's
// data, then ends Run's context and waits for Run to return.
func shutDownDuringData(t *testing.T, q *Queue, r *slowRelay) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	q.Kick()
	select {
	case <-r.gotData:
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("the relay never got the message")
	}
	stopped := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
	return time.Since(stopped)
}

// restart opens the database again, as the next process does, and
// delivers whatever is due.
func restart(t *testing.T, dir string, sopts storage.Options, relay string) *storage.DB {
	t.Helper()
	q, db := liveQueue(t, dir, sopts, relay, time.Second)
	if err := q.recoverLeases(); err != nil {
		t.Fatal(err)
	}
	if err := q.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestShutdownLetsATransactionInFlightFinish: a shutdown requested while
// the relay holds its final reply does not cut the transaction when the
// grace is longer than the wait. The message is recorded delivered before
// Run returns, and the next start does not send it again.
func TestShutdownLetsATransactionInFlightFinish(t *testing.T) {
	dir, sopts := t.TempDir(), storagetest.Options(t)
	relay := startSlowRelay(t, 2*time.Second)
	q, db := liveQueue(t, dir, sopts, relay.addr, 30*time.Second)
	m := acceptLive(t, q, db)
	shutDownDuringData(t, q, relay)
	st, _ := read(t, db, m)
	if st.Status != StatusDelivered || st.Recipients[0].Attempts != 1 {
		t.Fatalf("after shutdown: %s (%s), attempts %d", st.Status, st.Recipients[0].SMTPResponse, st.Recipients[0].Attempts)
	}
	var types []string
	db.View(func(tx *storage.Tx) error {
		evs, _, _, err := tx.Events(m.AccountID, storage.EventFilter{MessageID: m.ID}, storage.ListOptions{Limit: 10}, false)
		for _, ev := range evs {
			types = append(types, ev.Type)
		}
		return err
	})
	if got := strings.Join(types, ","); got != "message.sent,message.delivered" {
		t.Errorf("events %s", got)
	}
	db.Close()

	relay.setHold(0)
	db2 := restart(t, dir, sopts, relay.addr)
	st, _ = read(t, db2, m)
	if st.Status != StatusDelivered || relay.count() != 1 {
		t.Fatalf("after restart: %s, the relay received %d copies", st.Status, relay.count())
	}
}

// TestShutdownGraceOverCutsTheAttemptOff: when the grace is shorter than
// the relay's wait, the attempt is cut off when it is over, recorded as
// interrupted (deferred, due at once) with its lease given up, and the next
// start sends again: delivery is at least once.
func TestShutdownGraceOverCutsTheAttemptOff(t *testing.T) {
	dir, sopts := t.TempDir(), storagetest.Options(t)
	relay := startSlowRelay(t, 3*time.Second)
	q, db := liveQueue(t, dir, sopts, relay.addr, 200*time.Millisecond)
	m := acceptLive(t, q, db)
	if took := shutDownDuringData(t, q, relay); took > 2500*time.Millisecond {
		t.Errorf("Run took %s to return with a 200ms grace", took)
	}
	st, _ := read(t, db, m)
	r := st.Recipients[0]
	if st.Status != StatusDeferred || r.Status != StatusDeferred || r.NextAttemptAt == nil ||
		r.NextAttemptAt.After(time.Now()) || !strings.Contains(r.SMTPResponse, "canceled") {
		t.Fatalf("after shutdown: %s/%s (%s), next %v", st.Status, r.Status, r.SMTPResponse, r.NextAttemptAt)
	}
	var leases int
	db.View(func(tx *storage.Tx) error { leases = len(tx.Leases()); return nil })
	if leases != 0 {
		t.Errorf("%d leases left after shutdown", leases)
	}
	db.Close()

	relay.setHold(0)
	db2 := restart(t, dir, sopts, relay.addr)
	st, _ = read(t, db2, m)
	if st.Status != StatusDelivered || st.Recipients[0].Attempts != 2 || relay.count() != 2 {
		t.Fatalf("after restart: %s, attempts %d, the relay received %d copies", st.Status, st.Recipients[0].Attempts, relay.count())
	}
}

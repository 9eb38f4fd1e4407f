package hooks

import (
	"testing"
	"time"

	"mailbolt/storage"
)

// An event addressed to one webhook (an inbound route's email.received)
// goes to that webhook alone, whatever the event lists say; a disabled
// webhook gets nothing, addressed or subscribed.
func TestAddressedEventsAndDisabledWebhooks(t *testing.T) {
	h := newHarness(t, testOptions())
	rec := newReceiver(t, status(200))
	target := h.webhook(rec.URL+"/target", "message.delivered")
	subscribed := h.webhook(rec.URL+"/subscribed", "email.received", "message.sent")
	off := h.webhook(rec.URL+"/off", "email.received", "message.sent")
	off.Disabled = true
	if err := h.db.Update(func(tx *storage.Tx) error { return tx.PutWebhook(off) }); err != nil {
		t.Fatal(err)
	}

	addressed := h.event("email.received") // stored without an address first...
	ev := addressed
	ev.ID = ev.ID[:len(ev.ID)-4] + "beef"
	ev.WebhookID = target.ID
	if err := h.db.Update(func(tx *storage.Tx) error { return tx.AppendEvent(ev) }); err != nil {
		t.Fatal(err)
	}
	sent := h.event("message.sent")
	for h.step() > 0 {
	}
	if st := h.statusOf(target, ev); st != storage.DeliveryDelivered {
		t.Errorf("the addressed webhook: %q", st)
	}
	if st := h.statusOf(subscribed, ev); st != "" {
		t.Errorf("a webhook subscribed to the type got an event addressed to another: %q", st)
	}
	if st := h.statusOf(subscribed, addressed); st != storage.DeliveryDelivered {
		t.Errorf("an unaddressed event to its subscriber: %q", st)
	}
	if st := h.statusOf(subscribed, sent); st != storage.DeliveryDelivered {
		t.Errorf("message.sent to its subscriber: %q", st)
	}
	for _, e := range []storage.Event{ev, addressed, sent} {
		if st := h.statusOf(off, e); st != "" {
			t.Errorf("the disabled webhook got %s: %q", e.Type, st)
		}
	}
}

// A webhook receives only the events recorded after it was created, even
// those still waiting in the outbox when it was (behind busy workers): on
// the queued path and the fresh path alike. The times compare to the
// nanosecond, and an event of the very nanosecond of a creation goes to
// the webhook.
func TestWebhookGetsNoEventRecordedBeforeIt(t *testing.T) {
	for _, path := range []string{"queued", "fresh"} {
		t.Run(path, func(t *testing.T) {
			h := newHarness(t, testOptions())
			rec := newReceiver(t, status(200))
			early := h.webhook(rec.URL+"/early", "message.sent")
			withEarly := h.event("message.sent") // in the nanosecond early was created in
			h.clock.Add(time.Nanosecond)
			late := h.webhook(rec.URL+"/late", "message.sent")
			withLate := h.event("message.sent") // in the nanosecond late was created in
			if path == "queued" {
				for h.step() > 0 {
				}
			} else {
				h.runUntil("the deliveries saved", func() bool {
					return h.statusOf(early, withEarly) == storage.DeliveryDelivered &&
						h.statusOf(early, withLate) == storage.DeliveryDelivered && h.statusOf(late, withLate) == storage.DeliveryDelivered
				})
			}
			if st := h.statusOf(late, withEarly); st != "" {
				t.Errorf("a webhook created 1 ns after the event got it: %q", st)
			}
			for _, c := range []struct {
				w  storage.Webhook
				ev storage.Event
			}{{early, withEarly}, {early, withLate}, {late, withLate}} {
				if st := h.statusOf(c.w, c.ev); st != storage.DeliveryDelivered {
					t.Errorf("%s: an event recorded in or after the nanosecond of its creation: %q", c.w.URL, st)
				}
			}
		})
	}
}

package hooks

import (
	"testing"

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

package app

import (
	"math"
	"testing"

	"mailbolt/storage"
)

// TestListWebhooksOffsetPastTheEnd: ListWebhooks takes any offset, up to
// math.MaxInt (what the API asks for a page whose offset would overflow),
// after a cursor too, as past the end: no webhooks, the total, no panic
// from an offset that wrapped around when added to the cursor's position.
func TestListWebhooksOffsetPastTheEnd(t *testing.T) {
	a, c := newTestApp(t)
	acct, e := a.CreateAccount(AccountInput{Name: "acme"})
	if e != nil {
		t.Fatal(e)
	}
	p := operatorOf(t, a, acct.ID)
	var ids []string
	if err := a.db.Update(func(tx *storage.Tx) error {
		for range 3 {
			w := storage.Webhook{ID: NewID(), AccountID: acct.ID, URL: "https://hooks.example/x", Events: []string{EventSent}, CreatedAt: c.now()}
			ids = append(ids, w.ID)
			if err := tx.PutWebhook(w); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []storage.ListOptions{
		{Offset: math.MaxInt, Limit: 2},
		{After: []byte(ids[0]), Offset: math.MaxInt, Limit: 2},
		{After: []byte(ids[0]), Offset: 2, Limit: 2},
	} {
		list, res, total, e := a.ListWebhooks(p, opts)
		if e != nil || len(list) != 0 || res.HasMore || total != 3 {
			t.Errorf("offset %d after %q: %d webhooks, has_more %v, total %d, %v; want none of 3", opts.Offset, opts.After, len(list), res.HasMore, total, e)
		}
	}
	if list, _, _, e := a.ListWebhooks(p, storage.ListOptions{After: []byte(ids[0]), Offset: 1, Limit: 2}); e != nil || len(list) != 1 || list[0].ID != ids[2] {
		t.Errorf("offset 1 after the first: %v %v, want the third", list, e)
	}
}

package storage

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// indexMsgID is a UUIDv7-shaped id for the millisecond at, unique by n.
func indexMsgID(at time.Time, n int) string {
	ms := at.UnixMilli()
	return fmt.Sprintf("%08x-%04x-7000-8000-%012x", ms>>16, ms&0xffff, n)
}

// indexKeys lists the keys of one index bucket.
func indexKeys(t *testing.T, db *DB, bucket []byte) []string {
	t.Helper()
	var out []string
	db.View(func(tx *Tx) error {
		return tx.bucket(bucket).ForEach(func(k, _ []byte) error {
			out = append(out, string(bytes.ReplaceAll(k, []byte{sep}, []byte("|"))))
			return nil
		})
	})
	return out
}

// A message's index entries are written with it (every to, cc and bcc
// address lower cased, each tag, its campaign, its stream and status), the
// status entry moves when an update changes the status, and all are
// removed when it expires.
func TestMessageIndexesFollowTheMessage(t *testing.T) {
	db := openTest(t)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	keep := Message{ID: indexMsgID(at, 1), AccountID: "a1", Status: "queued", To: []string{"Ann <Ann@Dest.test>"},
		Cc: []string{"bob@dest.test"}, Bcc: []string{"cy@dest.test"}, Tags: []string{"welcome", "welcome", "eu"},
		CampaignID: "c7", CreatedAt: at, ExpiresAt: at.Add(48 * time.Hour),
		Recipients: []Recipient{{Email: "ann@dest.test", Kind: "to"}, {Email: "bob@dest.test", Kind: "cc"}, {Email: "cy@dest.test", Kind: "bcc"}}}
	gone := Message{ID: indexMsgID(at, 2), AccountID: "a1", Status: "queued", Stream: StreamBroadcast, To: []string{"ann@dest.test"},
		Tags: []string{"eu"}, CampaignID: "c8", CreatedAt: at, ExpiresAt: at.Add(time.Hour),
		Recipients: []Recipient{{Email: "ann@dest.test", Kind: "to"}}}
	if err := db.Update(func(tx *Tx) error {
		if err := tx.InsertMessage(keep, MessageContent{}, nil); err != nil {
			return err
		}
		return tx.InsertMessage(gone, MessageContent{}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	k1, k2 := keep.ID, gone.ID
	want := map[string][]string{
		"messages_by_recipient": {"a1|ann@dest.test|" + k1, "a1|ann@dest.test|" + k2, "a1|bob@dest.test|" + k1, "a1|cy@dest.test|" + k1},
		"messages_by_tag":       {"a1|eu|" + k1, "a1|eu|" + k2, "a1|welcome|" + k1},
		"messages_by_campaign":  {"a1|c7|" + k1, "a1|c8|" + k2},
		"messages_by_stream":    {"a1|broadcast|" + k2, "a1|transactional|" + k1},
		"messages_by_status":    {"a1|queued|" + k1, "a1|queued|" + k2},
	}
	for name, keys := range want {
		if got := indexKeys(t, db, []byte(name)); !slices.Equal(got, keys) {
			t.Errorf("%s after insert: %q, want %q", name, got, keys)
		}
	}
	// Status changes through the update path move the entry; an update
	// that keeps the status leaves it.
	setStatus := func(id, status string) {
		t.Helper()
		if err := db.Update(func(tx *Tx) error {
			m, err := tx.Message("a1", id)
			if err != nil {
				return err
			}
			m.Status = status
			return tx.UpdateMessage(m)
		}); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(k2, "sending")
	setStatus(k2, "delivered")
	setStatus(k1, "queued")
	if got, keys := indexKeys(t, db, bucketMessagesByStatus), []string{"a1|delivered|" + k2, "a1|queued|" + k1}; !slices.Equal(got, keys) {
		t.Errorf("messages_by_status after updates: %q, want %q", got, keys)
	}
	if err := db.Update(func(tx *Tx) error { _, err := tx.SweepExpired(at.Add(2*time.Hour), 100); return err }); err != nil {
		t.Fatal(err)
	}
	want = map[string][]string{
		"messages_by_recipient": {"a1|ann@dest.test|" + k1, "a1|bob@dest.test|" + k1, "a1|cy@dest.test|" + k1},
		"messages_by_tag":       {"a1|eu|" + k1, "a1|welcome|" + k1},
		"messages_by_campaign":  {"a1|c7|" + k1},
		"messages_by_stream":    {"a1|transactional|" + k1},
		"messages_by_status":    {"a1|queued|" + k1},
	}
	for name, keys := range want {
		if got := indexKeys(t, db, []byte(name)); !slices.Equal(got, keys) {
			t.Errorf("%s after expiry: %q, want %q", name, got, keys)
		}
	}
}

// mixedMessages are n messages of two accounts, both modes, a few
// recipients, tags, campaigns, statuses and streams, one a minute (two in
// some minutes) from base.
func mixedMessages(base time.Time, n int) []Message {
	rcpts := []string{"ann@dest.test", "bob@dest.test", "cy@dest.test", "dee@dest.test"}
	var out []Message
	for i := range n {
		at := base.Add(time.Duration(i/2*2) * time.Minute) // pairs share a millisecond
		to := rcpts[i%4]
		m := Message{ID: indexMsgID(at, i), AccountID: []string{"a1", "a2"}[i%7/6], Test: i%5 == 0,
			Status: []string{"queued", "delivered", "bounced"}[i%3], To: []string{to},
			Stream: []string{"", StreamBroadcast}[i%2], CreatedAt: at, ExpiresAt: at.Add(1000 * time.Hour),
			Recipients: []Recipient{{Email: to, Kind: "to"}}}
		if i%3 == 0 {
			m.Cc = []string{rcpts[(i+1)%4]}
			m.Recipients = append(m.Recipients, Recipient{Email: rcpts[(i+1)%4], Kind: "cc"})
		}
		if i%4 != 3 {
			m.Tags = []string{[]string{"t1", "t2"}[i%2]}
			if i%6 == 0 {
				m.Tags = append(m.Tags, "t3")
			}
		}
		if i%3 != 2 {
			m.CampaignID = []string{"c1", "c2"}[i%4/2]
		}
		out = append(out, m)
	}
	return out
}

// unindexedMessages is what tx.Messages answered before the indexes: a
// walk of every message of the account.
func unindexedMessages(tx *Tx, accountID string, f MessageFilter, opts ListOptions) ([]Message, ListResult, int, error) {
	f.Recipient = addressKey(f.Recipient) // as Messages takes it
	b := tx.bucket(bucketMessages)
	list, res, err := scanMatching(b, prefix(accountID), f.Range, opts, f.match)
	if err != nil {
		return nil, res, 0, err
	}
	total, err := countMatching(b, prefix(accountID), f.Range, f.match)
	return list, res, total, err
}

func messageIDs(list []Message) []string {
	var out []string
	for _, m := range list {
		out = append(out, m.ID)
	}
	return out
}

// Filtered lists served from an index are the walk's answer: the same
// messages, pages, cursors and totals, both ways, within time ranges, also
// after statuses changed through the update path.
func TestIndexedFiltersEqualTheWalk(t *testing.T) {
	db := openTest(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	msgs := mixedMessages(base, 240)
	if err := db.Update(func(tx *Tx) error {
		for _, m := range msgs {
			if err := tx.InsertMessage(m, MessageContent{}, nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Statuses move on after insert, one transaction per message as the
	// queue and the API do: some twice, some back to where they were.
	changed := 0
	for i, m := range msgs {
		var steps []string
		switch i % 8 {
		case 1:
			steps = []string{"sent"}
		case 2:
			steps = []string{"sending", "bounced"}
		case 4:
			steps = []string{"cancelled"}
		case 6:
			steps = []string{"sending", m.Status}
		}
		for _, st := range steps {
			if err := db.Update(func(tx *Tx) error {
				got, err := tx.Message(m.AccountID, m.ID)
				if err != nil {
					return err
				}
				got.Status = st
				return tx.UpdateMessage(got)
			}); err != nil {
				t.Fatal(err)
			}
			changed++
		}
	}
	lower := []byte(indexMsgID(base.Add(40*time.Minute), 0)[:13])
	upper := []byte(indexMsgID(base.Add(200*time.Minute), 0))
	filters := []MessageFilter{
		{Recipient: "ann@dest.test"}, {Recipient: "bob@dest.test", Test: true}, {Recipient: "ANN@dest.test"},
		{Recipient: "nobody@dest.test"}, {Tag: "t1"}, {Tag: "t3", Status: "queued"}, {CampaignID: "c2"},
		{CampaignID: "c1", Tag: "t2", Recipient: "cy@dest.test"}, {Recipient: "dee@dest.test", Stream: StreamBroadcast},
		{Tag: "t2", Range: Range{Lower: lower, Upper: upper}}, {Recipient: "bob@dest.test", Range: Range{Upper: upper}},
		{CampaignID: "c1", Range: Range{Lower: lower}},
		{Status: "queued"}, {Status: "sent"}, {Status: "bounced", Test: true}, {Status: "cancelled"}, {Status: "sending"},
		{Status: "delivered", Range: Range{Lower: lower, Upper: upper}}, {Status: "nonesuch"},
		{Stream: StreamBroadcast}, {Stream: StreamTransactional, Test: true}, {Stream: "nonesuch"},
		{Stream: StreamTransactional, Status: "cancelled"}, {Stream: StreamBroadcast, Range: Range{Upper: upper}},
		{Status: "bounced", Tag: "t1"}, {Status: "sent", CampaignID: "c2", Stream: StreamBroadcast},
	}
	checked := 0
	db.View(func(tx *Tx) error {
		for _, f := range filters {
			for _, acct := range []string{"a1", "a2", "a3"} {
				for _, reverse := range []bool{true, false} {
					var after []byte
					for page := 0; ; page++ {
						opts := ListOptions{Limit: 7, After: after, Reverse: reverse}
						got, gotRes, gotTotal, err := tx.Messages(acct, f, opts, true)
						if err != nil {
							t.Fatal(err)
						}
						want, wantRes, wantTotal, err := unindexedMessages(tx, acct, f, opts)
						if err != nil {
							t.Fatal(err)
						}
						checked += len(want)
						if !slices.Equal(messageIDs(got), messageIDs(want)) || gotRes.HasMore != wantRes.HasMore ||
							!bytes.Equal(gotRes.Next, wantRes.Next) || gotTotal != wantTotal {
							t.Fatalf("%+v %s reverse=%v page %d: indexed %v %+v %d, walk %v %+v %d", f, acct, reverse, page,
								messageIDs(got), gotRes, gotTotal, messageIDs(want), wantRes, wantTotal)
						}
						var scanned []Message
						if scanned, _, err = tx.ScanMessages(acct, f, opts, 0); err != nil || !slices.Equal(messageIDs(scanned), messageIDs(want)) {
							t.Fatalf("%+v %s: ScanMessages %v %v, walk %v", f, acct, messageIDs(scanned), err, messageIDs(want))
						}
						if !wantRes.HasMore {
							break
						}
						after = wantRes.Next
					}
				}
			}
		}
		return nil
	})
	if checked < 200 || changed < 100 {
		t.Fatalf("only %d messages compared, %d status changes: the store is not mixed enough", checked, changed)
	}
}

// A recipient filter over many messages of other recipients decodes only
// the recipient's messages: the index is read, not the account.
func TestRecipientFilterReadsOnlyTheIndex(t *testing.T) {
	db := openTest(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := db.Update(func(tx *Tx) error {
		for i := range 2000 {
			at := base.Add(time.Duration(i) * time.Second)
			to := "other@dest.test"
			if i == 3 || i == 1500 {
				to = "ann@dest.test"
			}
			m := Message{ID: indexMsgID(at, i), AccountID: "a1", Status: "delivered", To: []string{to}, Tags: []string{"bulk"},
				CreatedAt: at, ExpiresAt: at.Add(time.Hour), Recipients: []Recipient{{Email: to, Kind: "to"}}}
			if err := tx.InsertMessage(m, MessageContent{}, nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	decodes := 0
	onDecodeMessage = func() { decodes++ }
	defer func() { onDecodeMessage = nil }()
	db.View(func(tx *Tx) error {
		list, _, total, err := tx.Messages("a1", MessageFilter{Recipient: "ann@dest.test"}, ListOptions{Limit: 10, Reverse: true}, true)
		if err != nil || len(list) != 2 || total != 2 {
			t.Fatalf("ann's messages: %v %d %v", messageIDs(list), total, err)
		}
		if decodes != 4 { // the page and the total, two messages each
			t.Errorf("%d messages decoded for a page and total of 2", decodes)
		}
		decodes = 0
		list, sc, err := tx.ScanMessages("a1", MessageFilter{Recipient: "ann@dest.test"}, ListOptions{Limit: 10, Reverse: true}, 100)
		if err != nil || len(list) != 2 || sc.Spent || sc.Examined != 2 || decodes != 2 {
			t.Errorf("search for ann: %v %+v %v, %d decoded", messageIDs(list), sc, err, decodes)
		}
		// The walk, for contrast: a filter no index serves (the mode alone)
		// decodes its way through the account.
		decodes = 0
		if _, _, _, err := tx.Messages("a1", MessageFilter{Test: true}, ListOptions{Limit: 10, Reverse: true}, false); err != nil || decodes != 2000 {
			t.Errorf("mode walk: %d decoded, %v", decodes, err)
		}
		return nil
	})
}

// Migration 16 fills the indexes from the messages a version-15 file holds
// (more than one batch of them), so filtered lists find them at once.
func TestMigration16IndexesStoredMessages(t *testing.T) {
	msgs := mixedMessages(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 2500)
	db := migratedWithMessages(t, 15, msgs, [][]byte{bucketMessagesByRecipient})
	want := map[string]int{}
	for _, m := range msgs {
		for name, keys := range messageIndexEntries(&m) {
			want[name] += len(keys)
		}
	}
	for _, name := range messageIndexBuckets {
		if got := len(indexKeys(t, db, name)); got != want[string(name)] || got == 0 {
			t.Errorf("%s: %d entries, want %d", name, got, want[string(name)])
		}
	}
	db.View(func(tx *Tx) error {
		if v, last := schemaVersion(tx.btx), migrations[len(migrations)-1].version; v != last {
			t.Errorf("version %d, want %d", v, last)
		}
		for _, f := range []MessageFilter{{Recipient: "ann@dest.test"}, {Tag: "t3"}, {CampaignID: "c2", Test: true}} {
			got, _, total, err := tx.Messages("a1", f, ListOptions{Limit: 20, Reverse: true}, true)
			want, _, wantTotal, _ := unindexedMessages(tx, "a1", f, ListOptions{Limit: 20, Reverse: true})
			if err != nil || len(got) != 20 || !slices.Equal(messageIDs(got), messageIDs(want)) || total != wantTotal {
				t.Errorf("%+v after v16: %v %d %v, walk %v %d", f, messageIDs(got), total, err, messageIDs(want), wantTotal)
			}
		}
		return nil
	})
}

// A status filter over many messages of other statuses decodes only the
// messages of its status, though their statuses changed after insert: the
// index is read, not the account. A stream filter likewise.
func TestStatusFilterReadsOnlyTheIndex(t *testing.T) {
	db := openTest(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	if err := db.Update(func(tx *Tx) error {
		for i := range 2000 {
			at := base.Add(time.Duration(i) * time.Second)
			m := Message{ID: indexMsgID(at, i), AccountID: "a1", Status: "queued", To: []string{"x@dest.test"},
				CreatedAt: at, ExpiresAt: at.Add(time.Hour), Recipients: []Recipient{{Email: "x@dest.test", Kind: "to"}}}
			if i == 7 || i == 1200 || i == 1999 {
				m.Stream = StreamBroadcast
			}
			ids = append(ids, m.ID)
			if err := tx.InsertMessage(m, MessageContent{}, nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *Tx) error {
		for i, id := range ids {
			m, err := tx.Message("a1", id)
			if err != nil {
				return err
			}
			m.Status = "delivered"
			if i == 5 || i == 1500 {
				m.Status = "bounced"
			}
			if err := tx.UpdateMessage(m); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	decodes := 0
	onDecodeMessage = func() { decodes++ }
	defer func() { onDecodeMessage = nil }()
	db.View(func(tx *Tx) error {
		for _, c := range []struct {
			f    MessageFilter
			want []string
		}{
			{MessageFilter{Status: "bounced"}, []string{ids[1500], ids[5]}},
			{MessageFilter{Status: "queued"}, nil},
			{MessageFilter{Stream: StreamBroadcast}, []string{ids[1999], ids[1200], ids[7]}},
		} {
			decodes = 0
			list, _, total, err := tx.Messages("a1", c.f, ListOptions{Limit: 10, Reverse: true}, true)
			if err != nil || !slices.Equal(messageIDs(list), c.want) || total != len(c.want) {
				t.Errorf("%+v: %v %d %v, want %v", c.f, messageIDs(list), total, err, c.want)
			}
			if decodes != 2*len(c.want) { // the page and the total
				t.Errorf("%+v: %d messages decoded for a page and total of %d", c.f, decodes, len(c.want))
			}
		}
		return nil
	})
}

// Migration 17 fills the stream and status indexes (only those) from the
// messages a version-16 file holds (more than one batch of them), so
// status and stream filters find them at once.
func TestMigration17IndexesStoredMessages(t *testing.T) {
	msgs := mixedMessages(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 2500)
	db := migratedWithMessages(t, 16, msgs, messageIndexesV17)
	want := map[string][]string{}
	for _, m := range msgs {
		for name, keys := range messageIndexEntries(&m) {
			for _, k := range keys {
				want[name] = append(want[name], string(bytes.ReplaceAll(k, []byte{sep}, []byte("|"))))
			}
		}
	}
	for _, name := range messageIndexesV17 {
		w := want[string(name)]
		slices.Sort(w)
		if got := indexKeys(t, db, name); len(got) != 2500 || !slices.Equal(got, w) {
			t.Errorf("%s: %d entries, want the %d of the stored messages", name, len(got), len(w))
		}
	}
	// The messages were written after migration 16: migration 17 does not
	// fill its indexes.
	if got := indexKeys(t, db, bucketMessagesByTag); len(got) != 0 {
		t.Errorf("migration 17 wrote %d tag entries", len(got))
	}
	db.View(func(tx *Tx) error {
		if v := schemaVersion(tx.btx); v < 17 {
			t.Errorf("version %d, want 17 or later", v)
		}
		for _, f := range []MessageFilter{{Status: "bounced"}, {Stream: StreamBroadcast}, {Status: "queued", Test: true}} {
			got, _, total, err := tx.Messages("a1", f, ListOptions{Limit: 20, Reverse: true}, true)
			want, _, wantTotal, _ := unindexedMessages(tx, "a1", f, ListOptions{Limit: 20, Reverse: true})
			if err != nil || len(got) != 20 || !slices.Equal(messageIDs(got), messageIDs(want)) || total != wantTotal {
				t.Errorf("%+v after v17: %v %d %v, walk %v %d", f, messageIDs(got), total, err, messageIDs(want), wantTotal)
			}
		}
		return nil
	})
}

// migratedWithMessages is a file at schema version holding msgs as raw
// records, without the buckets absent (checked), opened so the later
// migrations run; it is closed when the test ends.
func migratedWithMessages(t *testing.T, version int, msgs []Message, absent [][]byte) *DB {
	t.Helper()
	b, path := openAt(t, version)
	if err := b.Update(func(tx *bolt.Tx) error {
		for _, m := range msgs {
			if err := tx.Bucket(bucketMessages).Put(join(m.AccountID, m.ID), encodeMessage(&m)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.View(func(tx *bolt.Tx) error {
		for _, name := range absent {
			if tx.Bucket(name) != nil {
				t.Errorf("a version-%d file has %s", version, name)
			}
		}
		return nil
	})
	return openMigrated(t, b, path)
}

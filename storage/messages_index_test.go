package storage

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
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
// address lower cased, each tag, its campaign) and removed when it expires.
func TestMessageIndexesFollowTheMessage(t *testing.T) {
	db := openTest(t)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	keep := Message{ID: indexMsgID(at, 1), AccountID: "a1", Status: "queued", To: []string{"Ann <Ann@Dest.test>"},
		Cc: []string{"bob@dest.test"}, Bcc: []string{"cy@dest.test"}, Tags: []string{"welcome", "welcome", "eu"},
		CampaignID: "c7", CreatedAt: at, ExpiresAt: at.Add(48 * time.Hour),
		Recipients: []Recipient{{Email: "ann@dest.test", Kind: "to"}, {Email: "bob@dest.test", Kind: "cc"}, {Email: "cy@dest.test", Kind: "bcc"}}}
	gone := Message{ID: indexMsgID(at, 2), AccountID: "a1", Status: "delivered", To: []string{"ann@dest.test"},
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
	}
	for name, keys := range want {
		if got := indexKeys(t, db, []byte(name)); !slices.Equal(got, keys) {
			t.Errorf("%s after insert: %q, want %q", name, got, keys)
		}
	}
	if err := db.Update(func(tx *Tx) error { _, err := tx.SweepExpired(at.Add(2*time.Hour), 100); return err }); err != nil {
		t.Fatal(err)
	}
	want = map[string][]string{
		"messages_by_recipient": {"a1|ann@dest.test|" + k1, "a1|bob@dest.test|" + k1, "a1|cy@dest.test|" + k1},
		"messages_by_tag":       {"a1|eu|" + k1, "a1|welcome|" + k1},
		"messages_by_campaign":  {"a1|c7|" + k1},
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
// messages, pages, cursors and totals, both ways, within time ranges.
func TestIndexedFiltersEqualTheWalk(t *testing.T) {
	db := openTest(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := db.Update(func(tx *Tx) error {
		for _, m := range mixedMessages(base, 240) {
			if err := tx.InsertMessage(m, MessageContent{}, nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lower := []byte(indexMsgID(base.Add(40*time.Minute), 0)[:13])
	upper := []byte(indexMsgID(base.Add(200*time.Minute), 0))
	filters := []MessageFilter{
		{Recipient: "ann@dest.test"}, {Recipient: "bob@dest.test", Test: true}, {Recipient: "ANN@dest.test"},
		{Recipient: "nobody@dest.test"}, {Tag: "t1"}, {Tag: "t3", Status: "queued"}, {CampaignID: "c2"},
		{CampaignID: "c1", Tag: "t2", Recipient: "cy@dest.test"}, {Recipient: "dee@dest.test", Stream: StreamBroadcast},
		{Tag: "t2", Range: Range{Lower: lower, Upper: upper}}, {Recipient: "bob@dest.test", Range: Range{Upper: upper}},
		{CampaignID: "c1", Range: Range{Lower: lower}},
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
	if checked < 200 {
		t.Fatalf("only %d messages compared: the store is not mixed enough", checked)
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
		// The walk, for contrast: a filter no index serves decodes its way
		// through the account.
		decodes = 0
		if _, _, _, err := tx.Messages("a1", MessageFilter{Status: "bounced"}, ListOptions{Limit: 10, Reverse: true}, false); err != nil || decodes != 2000 {
			t.Errorf("status walk: %d decoded, %v", decodes, err)
		}
		return nil
	})
}

// Migration 16 fills the indexes from the messages a version-15 file holds
// (more than one batch of them), so filtered lists find them at once.
func TestMigration16IndexesStoredMessages(t *testing.T) {
	b, path := openAt(t, 15)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	msgs := mixedMessages(base, 2500)
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
		if tx.Bucket(bucketMessagesByRecipient) != nil {
			t.Errorf("a version-15 file has messages_by_recipient")
		}
		return nil
	})
	b.Close()
	os.WriteFile(filepath.Join(filepath.Dir(path), SecretKeyFileName), []byte(hex.EncodeToString(bytes.Repeat([]byte{1}, 32))), 0o600)
	db, err := OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
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
		if v := schemaVersion(tx.btx); v != 16 {
			t.Errorf("version %d, want 16", v)
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

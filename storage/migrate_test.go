package storage

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func writeFile(path string, data []byte) error { return os.WriteFile(path, data, 0o600) }

// openAt creates a raw bbolt file migrated up to version v.
func openAt(t *testing.T, v int) (*bolt.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	migrateTo(t, b, v)
	return b, path
}

// openMigrated closes b, a file openAt made (and the test filled), and
// opens it as a DB, which migrates it to the newest schema. The secret
// key is the test sealer's, under which the older versions sealed their
// secrets. The DB is closed when the test ends.
func openMigrated(t *testing.T, b *bolt.DB, path string) *DB {
	t.Helper()
	b.Close()
	os.WriteFile(filepath.Join(filepath.Dir(path), SecretKeyFileName), []byte(hex.EncodeToString(bytes.Repeat([]byte{1}, 32))), 0o600)
	db, err := OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestMigration1CreatesBuckets(t *testing.T) {
	b, _ := openAt(t, 1)
	defer b.Close()
	b.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketAccounts, bucketAPIKeys, bucketAPIKeyHashes,
			bucketAPIKeysByAccount, bucketSuppressions, bucketTeam, bucketTeamEmails, bucketIdempotency, bucketExpiry} {
			if tx.Bucket(name) == nil {
				t.Errorf("bucket %s missing", name)
			}
		}
		if v := schemaVersion(boltTx{tx}); v != 1 {
			t.Errorf("version %d", v)
		}
		return nil
	})
}

func TestMigration2BackfillsCounts(t *testing.T) {
	b, path := openAt(t, 1)
	// Records written by a version-1 binary, which kept no counts.
	b.Update(func(tx *bolt.Tx) error {
		for _, r := range []string{"a@x.test", "b@x.test", "c@x.test"} {
			tx.Bucket(bucketSuppressions).Put(join("acct1", r), []byte(`{}`))
		}
		tx.Bucket(bucketSuppressions).Put(join("acct2", "z@x.test"), []byte(`{}`))
		tx.Bucket(bucketAPIKeysByAccount).Put(join("acct1", "k1"), nil)
		tx.Bucket(bucketTeam).Put(join("acct2", "m1"), []byte(`{}`))
		return nil
	})
	b.Close()

	db, err := OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, _ := db.SchemaVersion(); v != LatestSchemaVersion() {
		t.Fatalf("version %d, want %d", v, LatestSchemaVersion())
	}
	db.View(func(tx *Tx) error {
		for _, c := range []struct {
			got, want int
			what      string
		}{
			{tx.SuppressionCount("acct1"), 3, "acct1 suppressions"},
			{tx.SuppressionCount("acct2"), 1, "acct2 suppressions"},
			{tx.APIKeyCount("acct1"), 1, "acct1 keys"},
			{tx.TeamMemberCount("acct2"), 1, "acct2 team"},
			{tx.TeamMemberCount("acct1"), 0, "acct1 team"},
		} {
			if c.got != c.want {
				t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
			}
		}
		return nil
	})
}

func TestMigrationsAreIdempotentAcrossOpens(t *testing.T) {
	dir := t.TempDir()
	for range 2 {
		db, err := Open(dir, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *Tx) error {
			_, _, err := tx.PutSuppression(Suppression{AccountID: "a", Recipient: "x@y.test"})
			return err
		})
		db.Close()
	}
	db, _ := Open(dir, DefaultOptions())
	defer db.Close()
	db.View(func(tx *Tx) error {
		if n := tx.SuppressionCount("a"); n != 1 {
			t.Errorf("count %d after reopen", n)
		}
		return nil
	})
}

func TestNewerSchemaRefused(t *testing.T) {
	b, path := openAt(t, LatestSchemaVersion())
	b.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, putU64(uint64(LatestSchemaVersion()+1)))
	})
	b.Close()
	if _, err := OpenFile(path, DefaultOptions()); err == nil {
		t.Fatal("opened a database from the future")
	}
}

func TestMigration3AddsDomainAndTemplateBuckets(t *testing.T) {
	b, path := openAt(t, 2)
	b.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSuppressions).Put(join("acct1", "a@x.test"), []byte(`{"recipient":"a@x.test"}`))
	})
	b.Close()
	db, err := OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *Tx) error {
		if err := tx.InsertDomain(Domain{ID: "d1", AccountID: "acct1", Name: "x.test"}); err != nil {
			return err
		}
		return tx.PutTemplate(Template{ID: "t1", AccountID: "acct1", Version: 1}, TemplateVersion{TemplateID: "t1", Version: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if _, err := tx.Suppression("acct1", "a@x.test", ""); err != nil {
			t.Error("older data lost:", err)
		}
		return nil
	})
}

func TestMigration5CountsEventsPerMode(t *testing.T) {
	b, path := openAt(t, 4)
	b.Update(func(tx *bolt.Tx) error {
		for i, test := range []bool{true, false, false} {
			id := fmt.Sprintf("e%d", i)
			ev := fmt.Sprintf(`{"id":%q,"account_id":"a1","event":"message.sent","test":%v}`, id, test)
			if err := tx.Bucket(bucketEvents).Put(join("a1", id), []byte(ev)); err != nil {
				return err
			}
		}
		return nil
	})
	b.Close()
	db, err := OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *Tx) error {
		for test, want := range map[bool]int{true: 1, false: 2} {
			_, _, total, err := tx.Events("a1", EventFilter{Test: test}, ListOptions{Limit: 10}, true)
			if err != nil || total != want {
				t.Errorf("test=%v: total %d, %v; want %d", test, total, err, want)
			}
		}
		return nil
	})
}

func TestMigration6IndexesDomainStatus(t *testing.T) {
	b, path := openAt(t, 5)
	b.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDomains).Put([]byte("d1"), []byte(`{"id":"d1","account_id":"a1","name":"x.test","status":"verified"}`))
	})
	b.Close()
	db, err := OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *Tx) error {
		if s, err := tx.DomainStatus("a1", "x.test"); err != nil || s != "verified" {
			t.Errorf("status %q, %v", s, err)
		}
		return nil
	})
}

func TestMigration8AddsGraderResults(t *testing.T) {
	b, path := openAt(t, 7)
	b.Close()
	db, err := OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *Tx) error {
		return tx.InsertGraderResult(GraderResult{ID: "r1", AccountID: "a1", Result: []byte(`{}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if _, _, total, err := tx.GraderResults("a1", ListOptions{Limit: 10}); err != nil || total != 1 {
			t.Errorf("total %d, %v", total, err)
		}
		return nil
	})
}

// migrateTo runs the migrations up to version v on b.
func migrateTo(t *testing.T, b *bolt.DB, v int) {
	t.Helper()
	var upTo []migration
	for _, m := range migrations {
		if m.version <= v {
			upTo = append(upTo, m)
		}
	}
	if _, err := migrate(boltStore{b}, upTo, testSealer(t), nil); err != nil {
		t.Fatal(err)
	}
}

func TestMigration4AddsEventAndWebhookBuckets(t *testing.T) {
	b, path := openAt(t, 3)
	added := [][]byte{bucketEvents, bucketEventBodies, bucketEventOutbox, bucketWebhooks, bucketWebhookIDs,
		bucketDeliveries, bucketDeliveriesByWebhook, bucketDeliveriesByStatus, bucketDeliveryByEvent, bucketDeliveryQueue}
	b.View(func(tx *bolt.Tx) error {
		for _, name := range added {
			if tx.Bucket(name) != nil {
				t.Fatalf("bucket %s exists at version 3", name)
			}
		}
		return nil
	})
	// A version-3 file with a domain in it.
	if err := b.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDomains).Put([]byte("d1"), []byte(`{"id":"d1","account_id":"a1","name":"x.test"}`))
	}); err != nil {
		t.Fatal(err)
	}
	migrateTo(t, b, 4)
	b.View(func(tx *bolt.Tx) error {
		if v := schemaVersion(boltTx{tx}); v != 4 {
			t.Errorf("version %d, want 4", v)
		}
		for _, name := range added {
			if tx.Bucket(name) == nil {
				t.Errorf("bucket %s missing at version 4", name)
			}
		}
		return nil
	})
	b.Close()

	// The buckets hold what the event and webhook code writes.
	db, err := OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *Tx) error {
		if err := tx.PutWebhook(Webhook{ID: "w1", AccountID: "a1"}); err != nil {
			return err
		}
		if err := tx.AppendEvent(Event{ID: "e1", AccountID: "a1", Type: "message.sent", Envelope: []byte(`{}`)}); err != nil {
			return err
		}
		return tx.InsertDelivery(Delivery{ID: "dl1", WebhookID: "w1", AccountID: "a1", EventID: "e1", Status: DeliveryPending, NextAttemptAt: minuteAt(0)})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if out, err := tx.Outbox(10); err != nil || len(out) != 1 || out[0].Event.ID != "e1" {
			t.Errorf("outbox %v, %v", out, err)
		}
		if due, ok := tx.NextDeliveryDue(); !ok || !due.Equal(*minuteAt(0)) {
			t.Errorf("next delivery due %v, %v", due, ok)
		}
		if _, err := tx.Domain("a1", "d1"); err != nil {
			t.Error("older data lost:", err)
		}
		return nil
	})
}

func TestMigration7AddsSecretAndBackfillsMessageOwners(t *testing.T) {
	secretOf := func(b *bolt.DB) []byte {
		var s []byte
		b.View(func(tx *bolt.Tx) error {
			s = append(s, tx.Bucket(bucketMeta).Get(keyServerSecret)...)
			return nil
		})
		return s
	}
	b, path := openAt(t, 6)
	if s := secretOf(b); s != nil {
		t.Fatalf("a version-6 file has a server secret: %x", s)
	}
	// Messages stored by a version-6 binary, which kept no owner index.
	if err := b.Update(func(tx *bolt.Tx) error {
		for _, k := range [][2]string{{"a1", "m1"}, {"a1", "m2"}, {"a2", "m3"}} {
			m := Message{ID: k[1], AccountID: k[0], Status: "delivered"}
			if err := tx.Bucket(bucketMessages).Put(join(k[0], k[1]), encodeMessage(&m)); err != nil {
				return err
			}
			if err := tx.Bucket(bucketMessageContent).Put([]byte(k[1]), []byte(`{"subject":"s-`+k[1]+`"}`)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	migrateTo(t, b, 7)
	secret := secretOf(b)
	b.View(func(tx *bolt.Tx) error {
		if v := schemaVersion(boltTx{tx}); v != 7 {
			t.Errorf("version %d, want 7", v)
		}
		for _, name := range [][]byte{bucketMessageOwner, bucketMessageLinks, bucketEngagement, bucketStats} {
			if tx.Bucket(name) == nil {
				t.Errorf("bucket %s missing at version 7", name)
			}
		}
		return nil
	})
	if len(secret) != 32 || bytes.Equal(secret, make([]byte, 32)) {
		t.Fatalf("server secret %x, want 32 random bytes", secret)
	}
	b.Close()

	db, err := OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *Tx) error {
		if got, _ := tx.ServerSecret(); !bytes.Equal(got, secret) {
			t.Errorf("secret changed by a later open: %x, want %x", got, secret)
		}
		for id, acct := range map[string]string{"m1": "a1", "m2": "a1", "m3": "a2"} {
			if owner, err := tx.MessageOwner(id); err != nil || owner != acct {
				t.Errorf("owner of %s = %q, %v; want %s", id, owner, err, acct)
			}
			// Older messages are read through the scoped getters too.
			if c, err := tx.MessageContent(acct, id); err != nil || c.Subject != "s-"+id {
				t.Errorf("content of %s: %+v, %v", id, c, err)
			}
		}
		return nil
	})

	// Another installation gets its own secret; a file that already has
	// one keeps it.
	other, _ := openAt(t, 7)
	defer other.Close()
	if bytes.Equal(secretOf(other), secret) {
		t.Error("two installations share a server secret")
	}
	kept, _ := openAt(t, 6)
	defer kept.Close()
	mine := bytes.Repeat([]byte{7}, 32)
	if err := kept.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyServerSecret, mine) }); err != nil {
		t.Fatal(err)
	}
	migrateTo(t, kept, 7)
	if got := secretOf(kept); !bytes.Equal(got, mine) {
		t.Errorf("migration 7 replaced an existing secret: %x", got)
	}
}

// TestMigration10RecordsAnnouncementsOnce: the new buckets take an
// announcement once per (version, sunset) pair and its notices; a file
// that held accounts is marked as upgraded until an announcement is
// recorded, a file without any is not.
func TestMigration10RecordsAnnouncementsOnce(t *testing.T) {
	b, path := openAt(t, 9)
	b.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAccounts).Put([]byte("acct1"), []byte(`{"id":"acct1"}`))
	})
	db := openMigrated(t, b, path)
	sunset := time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)
	a := Announcement{Version: "v1", Sunset: sunset, AnnouncedAt: sunset.AddDate(-1, 0, 0)}
	err := db.Update(func(tx *Tx) error {
		if !tx.UpgradeMarked() {
			t.Error("a file with accounts is not marked as upgraded")
		}
		if err := tx.ClaimAnnouncement(a); err != nil {
			return err
		}
		if tx.UpgradeMarked() {
			t.Error("the mark outlived the first announcement")
		}
		for _, n := range []Notice{{Version: "v1", Sunset: sunset, AccountID: "acct1", Recipient: "o@x.test", MessageID: "m1"},
			{Version: "v1", Sunset: sunset, AccountID: "acct2", Reason: "no_recipient"}} {
			if err := tx.PutNotice(n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *Tx) error { return tx.ClaimAnnouncement(a) })
	if !errors.Is(err, ErrExists) {
		t.Fatalf("a second claim of the pair: %v, want ErrExists", err)
	}
	later := a
	later.Sunset = sunset.AddDate(0, 1, 0)
	if err := db.Update(func(tx *Tx) error { return tx.ClaimAnnouncement(later) }); err != nil {
		t.Fatalf("a new sunset date is a new announcement: %v", err)
	}
	db.View(func(tx *Tx) error {
		list, err := tx.Announcements()
		if err != nil || len(list) != 2 || !list[0].Sunset.Equal(sunset) || !list[1].Sunset.Equal(later.Sunset) {
			t.Errorf("announcements %+v %v", list, err)
		}
		ns, err := tx.Notices()
		if err != nil || len(ns) != 2 || ns[0].Recipient != "o@x.test" || ns[1].Reason != "no_recipient" {
			t.Errorf("notices %+v %v", ns, err)
		}
		return nil
	})

	fresh, err := Open(t.TempDir(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	fresh.View(func(tx *Tx) error {
		if tx.UpgradeMarked() {
			t.Error("a new, empty database is marked as upgraded")
		}
		return nil
	})
}

func TestMigration11AddsTemplateAliases(t *testing.T) {
	b, path := openAt(t, 10)
	b.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTemplates).Put(join("a1", "t-old"), []byte(`{"id":"t-old","account_id":"a1","name":"Old","version":1}`))
	})
	db := openMigrated(t, b, path)
	err := db.Update(func(tx *Tx) error {
		old, err := tx.Template("a1", "t-old")
		if err != nil || old.Alias != "" {
			t.Errorf("a template stored before v11: %+v %v", old, err)
		}
		old.Alias = "welcome"
		return tx.PutTemplate(old, TemplateVersion{TemplateID: "t-old", Version: 2})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if id, err := tx.TemplateIDByAlias("a1", "welcome"); id != "t-old" || err != nil {
			t.Errorf("alias resolves to %q, %v", id, err)
		}
		return nil
	})
}

// TestMigration12GivesUnsubscribesTheBroadcastStream: an unsubscribe
// stored before streams stops broadcast mail only; a hard bounce still
// stops all of it.
func TestMigration12GivesUnsubscribesTheBroadcastStream(t *testing.T) {
	b, path := openAt(t, 11)
	b.Update(func(tx *bolt.Tx) error {
		s := tx.Bucket(bucketSuppressions)
		s.Put(join("a1", "u@x.test"), []byte(`{"account_id":"a1","recipient":"u@x.test","reason":"unsubscribe","source_message_id":"m1","created_at":"2026-01-02T03:04:05Z"}`))
		s.Put(join("a1", "h@x.test"), []byte(`{"account_id":"a1","recipient":"h@x.test","reason":"hard_bounce","created_at":"2026-01-02T03:04:05Z"}`))
		return tx.Bucket(bucketCounts).Put(join(collectionSuppressions, "a1"), putU64(2))
	})
	db := openMigrated(t, b, path)
	db.View(func(tx *Tx) error {
		if _, err := tx.Suppression("a1", "u@x.test", ""); !errors.Is(err, ErrNotFound) {
			t.Errorf("the unsubscribe is still an entry for all streams: %v", err)
		}
		u, err := tx.Suppression("a1", "u@x.test", StreamBroadcast)
		if err != nil || u.Stream != StreamBroadcast || u.Reason != "unsubscribe" || u.SourceMessageID != "m1" {
			t.Errorf("the unsubscribe after v12: %+v %v", u, err)
		}
		if tx.Suppressed("a1", "u@x.test", StreamTransactional) || !tx.Suppressed("a1", "u@x.test", StreamBroadcast) {
			t.Error("the unsubscribe does not suppress broadcast mail only")
		}
		h, err := tx.Suppression("a1", "h@x.test", "")
		if err != nil || h.Stream != "" {
			t.Errorf("the hard bounce after v12: %+v %v", h, err)
		}
		if !tx.Suppressed("a1", "h@x.test", StreamTransactional) || !tx.Suppressed("a1", "h@x.test", StreamBroadcast) {
			t.Error("the hard bounce does not suppress every stream")
		}
		list, _, err := tx.Suppressions("a1", ListOptions{Limit: 10})
		if err != nil || len(list) != 2 || tx.SuppressionCount("a1") != 2 {
			t.Errorf("list %+v %v, count %d", list, err, tx.SuppressionCount("a1"))
		}
		return nil
	})
}

// TestMigration15IndexesMembersByEmail: a member stored before v15 is found
// by its email afterwards, and the dashboard's buckets exist.
func TestMigration15IndexesMembersByEmail(t *testing.T) {
	b, path := openAt(t, 13)
	b.Update(func(tx *bolt.Tx) error {
		tx.Bucket(bucketTeam).Put(join("a1", "m1"), []byte(`{"id":"m1","account_id":"a1","email":"ann@example.com","role":"owner","status":"active"}`))
		return tx.Bucket(bucketTeamEmails).Put(join("a1", "ann@example.com"), []byte("m1"))
	})
	db := openMigrated(t, b, path)
	db.View(func(tx *Tx) error {
		ms, err := tx.Memberships("ann@example.com")
		if err != nil || len(ms) != 1 || ms[0] != (Membership{AccountID: "a1", MemberID: "m1"}) {
			t.Errorf("memberships after v15: %+v %v", ms, err)
		}
		if _, err := tx.Person("ann@example.com"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a person before any password: %v", err)
		}
		if list, _, err := tx.AuditLog("a1", ListOptions{Limit: 10}); err != nil || len(list) != 0 {
			t.Errorf("audit log after v15: %v %v", list, err)
		}
		return nil
	})
}

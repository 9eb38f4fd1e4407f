package storage

import (
	"bytes"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"mailbolt/storage/pgtest"
)

// TestPeopleEitherIDNSpelling: a member, a person, their sessions and
// memberships are found under either spelling of an internationalised
// domain (and in any case), and stored under one key, so the other
// spelling is the same member, not a second one.
func TestPeopleEitherIDNSpelling(t *testing.T) {
	db := openTest(t)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	err := db.Update(func(tx *Tx) error {
		m := TeamMember{ID: "m1", AccountID: "a1", Email: "ann@exämple.org", Role: "admin", Status: "active", InvitedAt: at}
		if err := tx.InsertTeamMember(m); err != nil {
			return err
		}
		m.ID = "m2"
		m.Email = "ann@xn--exmple-cua.org"
		if err := tx.InsertTeamMember(m); !errors.Is(err, ErrExists) {
			t.Errorf("the other spelling inserted beside the first: %v", err)
		}
		if err := tx.PutPerson(Person{Email: "ann@exämple.org", PasswordHash: "h", PasswordSetAt: at}); err != nil {
			return err
		}
		if err := tx.PutPasswordLink([]byte("link"), PasswordLink{AccountID: "a1", Email: "ann@exämple.org", ExpiresAt: at.Add(time.Hour)}); err != nil {
			return err
		}
		return tx.PutSession([]byte("hash"), Session{Email: "Ann@Exämple.org", AccountID: "a1", ExpiresAt: at.Add(time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	const key = "ann@xn--exmple-cua.org"
	db.View(func(tx *Tx) error {
		for _, spelling := range []string{"ann@exämple.org", key, "ANN@EXÄMPLE.ORG"} {
			if m, err := tx.TeamMemberByEmail("a1", spelling); err != nil || m.ID != "m1" || m.Email != key {
				t.Errorf("member by %s: %+v %v", spelling, m, err)
			}
			if p, err := tx.Person(spelling); err != nil || p.Email != key {
				t.Errorf("person by %s: %+v %v", spelling, p, err)
			}
			if ms, _ := tx.Memberships(spelling); len(ms) != 1 || ms[0].MemberID != "m1" {
				t.Errorf("memberships of %s: %+v", spelling, ms)
			}
		}
		if s, _ := tx.Session([]byte("hash")); s.Email != key {
			t.Errorf("session: %+v", s)
		}
		if l, _ := tx.PasswordLink([]byte("link")); l.Email != key {
			t.Errorf("link: %+v", l)
		}
		return nil
	})
	err = db.Update(func(tx *Tx) error {
		if n, err := tx.DeleteSessions("ann@exämple.org", ""); n != 1 || err != nil {
			t.Errorf("sessions ended by the other spelling: %d %v", n, err)
		}
		return tx.DeleteTeamMember("a1", "m1")
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{bucketTeamEmails, bucketTeamByEmail, bucketSessionsByEmail} {
		if got := indexKeys(t, db, b); len(got) != 0 {
			t.Errorf("%s left %q", b, got)
		}
	}
}

// v19People is what a schema 19 database held of people whose domain is
// in Unicode (all lower-cased, as NormalizeAddress stored them then).
type v19People struct {
	at   time.Time
	seed []byte // ann's TOTP key, in clear
}

// fill writes the records as v15 to v19 wrote them, in one transaction.
func (f v19People) fill(t *testing.T, tx kvTx, s *sealer) {
	t.Helper()
	at := f.at
	put := func(bucket []byte, key []byte, v any) {
		t.Helper()
		if err := putJSON(tx.Bucket(bucket), key, v); err != nil {
			t.Fatal(err)
		}
	}
	raw := func(bucket, key, v []byte) {
		t.Helper()
		if err := tx.Bucket(bucket).Put(key, v); err != nil {
			t.Fatal(err)
		}
	}
	put(bucketAccounts, []byte("a1"), Account{ID: "a1", Name: "one", Plan: "free", Email: "ops@exämple.org", CreatedAt: at})
	put(bucketAccounts, []byte("a2"), Account{ID: "a2", Name: "two", Plan: "free", Email: "x@example.com", CreatedAt: at})
	for _, m := range []TeamMember{
		{ID: "m1", AccountID: "a1", Email: "ann@exämple.org", Role: "admin", Status: "active", InvitedAt: at},
		{ID: "m2", AccountID: "a1", Email: "bob@example.com", Role: "viewer", Status: "active", InvitedAt: at},
		{ID: "m3", AccountID: "a2", Email: "ann@exämple.org", Role: "developer", Status: "invited", InvitedAt: at},
		// Added again under the A-label after the Unicode one was removed:
		// that old login (below) is of no account now.
		{ID: "m4", AccountID: "a1", Email: "old@xn--bcher-kva.example", Role: "viewer", Status: "active", InvitedAt: at},
	} {
		put(bucketTeam, join(m.AccountID, m.ID), m)
		raw(bucketTeamEmails, join(m.AccountID, m.Email), []byte(m.ID))
		raw(bucketTeamByEmail, join(m.Email, m.AccountID), []byte(m.ID))
	}
	raw(bucketCounts, join(collectionTeam, "a1"), putU64(3))
	raw(bucketCounts, join(collectionTeam, "a2"), putU64(1))
	put(bucketPeople, []byte("ann@exämple.org"), Person{Email: "ann@exämple.org", PasswordHash: "h-ann", PasswordSetAt: at,
		TOTPSeed: s.seal(personContext("ann@exämple.org", "totp_seed"), f.seed)})
	put(bucketPeople, []byte("bob@example.com"), Person{Email: "bob@example.com", PasswordHash: "h-bob", PasswordSetAt: at})
	// The old login's password is the newer one: being a member is what
	// keeps a login, not its age.
	put(bucketPeople, []byte("old@bücher.example"), Person{Email: "old@bücher.example", PasswordHash: "h-old", PasswordSetAt: at.Add(time.Hour)})
	put(bucketPeople, []byte("old@xn--bcher-kva.example"), Person{Email: "old@xn--bcher-kva.example", PasswordHash: "h-new", PasswordSetAt: at})
	// Two logins of no account: the one whose password was set last stays.
	put(bucketPeople, []byte("gone@bücher.example"), Person{Email: "gone@bücher.example", PasswordHash: "h-gone-late", PasswordSetAt: at.Add(time.Hour)})
	put(bucketPeople, []byte("gone@xn--bcher-kva.example"), Person{Email: "gone@xn--bcher-kva.example", PasswordHash: "h-gone-early", PasswordSetAt: at})
	for hash, s := range map[string]Session{
		"s-ann": {Email: "ann@exämple.org", AccountID: "a1", CSRF: "c", CreatedAt: at, LastSeenAt: at, ExpiresAt: at.Add(time.Hour)},
		"s-old": {Email: "old@bücher.example", CSRF: "c", CreatedAt: at, LastSeenAt: at, ExpiresAt: at.Add(time.Hour)},
		"s-bob": {Email: "bob@example.com", AccountID: "a1", CSRF: "c", CreatedAt: at, LastSeenAt: at, ExpiresAt: at.Add(time.Hour)},
	} {
		put(bucketSessions, []byte(hash), s)
		raw(bucketSessionsByEmail, append(prefix(s.Email), hash...), nil)
	}
	put(bucketPasswordLinks, []byte("l-ann"), PasswordLink{AccountID: "a1", Email: "ann@exämple.org", CreatedAt: at, ExpiresAt: at.Add(time.Hour)})
	put(bucketPasswordLinks, []byte("l-old"), PasswordLink{AccountID: "a1", Email: "old@bücher.example", CreatedAt: at, ExpiresAt: at.Add(time.Hour)})
	put(bucketPasswordLinks, []byte("l-owner"), PasswordLink{AccountID: "a2", Owner: true, CreatedAt: at, ExpiresAt: at.Add(time.Hour)})
	put(bucketAPIKeys, []byte("k1"), APIKey{ID: "k1", AccountID: "a1", Name: "ann's <ci> & more", Prefix: "svc_live_x", Hash: []byte{1}, CreatedBy: "ann@exämple.org", CreatedAt: at})
	put(bucketAPIKeys, []byte("k2"), APIKey{ID: "k2", AccountID: "a1", Name: "op's", Prefix: "svc_live_y", Hash: []byte{2}, CreatedBy: "operator", CreatedAt: at})
}

// check is what v20 must have made of them.
func (f v19People) check(t *testing.T, db *DB) {
	t.Helper()
	const ann, old, gone = "ann@xn--exmple-cua.org", "old@xn--bcher-kva.example", "gone@xn--bcher-kva.example"
	db.View(func(tx *Tx) error {
		for _, spelling := range []string{"ann@exämple.org", ann} {
			for acct, id := range map[string]string{"a1": "m1", "a2": "m3"} {
				if m, err := tx.TeamMemberByEmail(acct, spelling); err != nil || m.ID != id || m.Email != ann {
					t.Errorf("member of %s by %s: %+v %v", acct, spelling, m, err)
				}
			}
			ms, _ := tx.Memberships(spelling)
			if len(ms) != 2 || ms[0] != (Membership{"a1", "m1"}) || ms[1] != (Membership{"a2", "m3"}) {
				t.Errorf("memberships of %s: %+v", spelling, ms)
			}
			p, err := tx.Person(spelling)
			if err != nil || p.Email != ann || p.PasswordHash != "h-ann" || !bytes.Equal(p.TOTPSeed, f.seed) {
				t.Errorf("person %s: %+v %v", spelling, p, err)
			}
		}
		for spelling, hash := range map[string]string{"old@bücher.example": "h-new", old: "h-new", "gone@bücher.example": "h-gone-late", gone: "h-gone-late"} {
			if p, err := tx.Person(spelling); err != nil || p.PasswordHash != hash {
				t.Errorf("person %s: %+v %v, want the login with password %s", spelling, p, err, hash)
			}
		}
		if m, err := tx.TeamMemberByEmail("a1", "old@bücher.example"); err != nil || m.ID != "m4" {
			t.Errorf("member m4 by its other spelling: %+v %v", m, err)
		}
		if n := tx.TeamMemberCount("a1"); n != 3 {
			t.Errorf("a1 has %d members", n)
		}
		if s, err := tx.Session([]byte("s-ann")); err != nil || s.Email != ann || s.AccountID != "a1" {
			t.Errorf("ann's session: %+v %v", s, err)
		}
		if s, err := tx.Session([]byte("s-old")); !errors.Is(err, ErrNotFound) {
			t.Errorf("the dropped login's session was kept: %+v %v", s, err)
		}
		if l, err := tx.PasswordLink([]byte("l-ann")); err != nil || l.Email != ann {
			t.Errorf("ann's link: %+v %v", l, err)
		}
		if l, err := tx.PasswordLink([]byte("l-old")); !errors.Is(err, ErrNotFound) {
			t.Errorf("the dropped login's link was kept: %+v %v", l, err)
		}
		if l, err := tx.PasswordLink([]byte("l-owner")); err != nil || !l.Owner || l.Email != "" {
			t.Errorf("owner link: %+v %v", l, err)
		}
		if a, _ := tx.Account("a1"); a.Email != "ops@xn--exmple-cua.org" {
			t.Errorf("a1's contact address %q", a.Email)
		}
		if a, _ := tx.Account("a2"); a.Email != "x@example.com" {
			t.Errorf("a2's contact address %q", a.Email)
		}
		for id, by := range map[string]string{"k1": ann, "k2": "operator"} {
			if k, err := tx.APIKey("a1", id); err != nil || k.CreatedBy != by || len(k.Hash) != 1 {
				t.Errorf("key %s: %+v %v, want created by %s", id, k, err, by)
			}
		}
		return nil
	})
	// The indexes hold exactly the new keys: nothing is left under the
	// Unicode spelling.
	for _, c := range []struct {
		bucket []byte
		want   []string
	}{
		{bucketTeamEmails, []string{"a1|" + ann, "a1|bob@example.com", "a1|" + old, "a2|" + ann}},
		{bucketTeamByEmail, []string{ann + "|a1", ann + "|a2", "bob@example.com|a1", old + "|a1"}},
		{bucketSessionsByEmail, []string{ann + "|s-ann", "bob@example.com|s-bob"}},
		{bucketPeople, []string{"bob@example.com", gone, old, ann}},
	} {
		got := indexKeys(t, db, c.bucket)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s after v20:\n%q\nwant\n%q", c.bucket, got, c.want)
		}
	}
	err := db.Update(func(tx *Tx) error {
		if n, err := tx.DeleteSessions("ann@exämple.org", ""); n != 1 || err != nil {
			t.Errorf("sessions ended by the other spelling: %d %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func newV19People() v19People {
	return v19People{at: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), seed: []byte("0123456789abcdefghij")}
}

// notesLogger is a logger that writes into buf.
func notesLogger(buf *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(buf, nil)) }

// TestMigration20KeysPeopleByALabel: members, people, sessions, links,
// contact addresses and key makers stored with a Unicode domain before
// v20 are in A-label form after it, found under either spelling, their
// TOTP keys still open; a login of no account that becomes another's key
// is dropped with its session and link, and the log says so.
func TestMigration20KeysPeopleByALabel(t *testing.T) {
	f := newV19People()
	b, path := openAt(t, 19)
	if err := (boltStore{b}).Update(func(tx kvTx) error { f.fill(t, tx, testSealer(t)); return nil }); err != nil {
		t.Fatal(err)
	}
	b.Close()
	writeTestKey(path)
	var logs bytes.Buffer
	o := DefaultOptions()
	o.Logger = notesLogger(&logs)
	db, err := OpenFile(path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, _ := db.SchemaVersion(); v != 20 {
		t.Errorf("schema version %d", v)
	}
	f.check(t, db)
	for _, want := range []string{"dashboard login old@bücher.example dropped", "1 session(s) and 1 set-password link(s)",
		"dashboard login gone@xn--bcher-kva.example dropped", "migration=20"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}
}

// TestMigration20RefusesToMergePeople: two members of one account, or two
// logins that are each a member somewhere, whose addresses become one are
// not merged: the start is refused with a message naming them, and the
// file is left at schema 19 as it was.
func TestMigration20RefusesToMergePeople(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		members []TeamMember
		people  []string
		want    []string
	}{
		{"two members of one account", []TeamMember{
			{ID: "m1", AccountID: "a1", Email: "ann@exämple.org", Role: "admin", Status: "active", InvitedAt: at},
			{ID: "m2", AccountID: "a1", Email: "ann@xn--exmple-cua.org", Role: "viewer", Status: "invited", InvitedAt: at},
		}, nil, []string{"account a1 has 2 members whose addresses are one, ann@xn--exmple-cua.org",
			"ann@exämple.org (member m1, admin, active) and ann@xn--exmple-cua.org (member m2, viewer, invited)"}},
		{"two logins of two accounts", []TeamMember{
			{ID: "m1", AccountID: "a1", Email: "ann@exämple.org", Role: "admin", Status: "active", InvitedAt: at},
			{ID: "m2", AccountID: "a2", Email: "ann@xn--exmple-cua.org", Role: "owner", Status: "active", InvitedAt: at},
		}, []string{"ann@exämple.org", "ann@xn--exmple-cua.org"}, []string{
			"2 dashboard logins, each with its own password, are one address, ann@xn--exmple-cua.org",
			"ann@exämple.org (member of account a1) and ann@xn--exmple-cua.org (member of account a2)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, path := openAt(t, 19)
			b.Update(func(tx *bolt.Tx) error {
				for _, m := range c.members {
					putJSON(boltBucket{tx.Bucket(bucketTeam)}, join(m.AccountID, m.ID), m)
					tx.Bucket(bucketTeamEmails).Put(join(m.AccountID, m.Email), []byte(m.ID))
					tx.Bucket(bucketTeamByEmail).Put(join(m.Email, m.AccountID), []byte(m.ID))
				}
				for _, p := range c.people {
					putJSON(boltBucket{tx.Bucket(bucketPeople)}, []byte(p), Person{Email: p, PasswordHash: "h " + p, PasswordSetAt: at})
				}
				return nil
			})
			before := dumpBuckets(t, b, bucketTeam, bucketTeamEmails, bucketTeamByEmail, bucketPeople)
			b.Close()
			writeTestKey(path)
			_, err := OpenFile(path, DefaultOptions())
			if err == nil {
				t.Fatal("the migration merged them")
			}
			for _, want := range append(c.want, "migration 20", "Nothing was changed: the database stays at schema version 19, which the release before this one opens",
				"mailbolt team remove --account ID --email ADDR --keep-keys") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q:\n%v", want, err)
				}
			}
			// It refuses at every start, and a refusal that committed
			// nothing leaves no copy of the file behind: a service that
			// restarts on failure would otherwise fill the disk.
			if _, err := OpenFile(path, DefaultOptions()); err == nil {
				t.Fatal("the second start merged them")
			}
			if copies, _ := filepath.Glob(path + ".pre-migration-*"); len(copies) != 0 {
				t.Errorf("refused migrations left copies of the file: %q", copies)
			}
			b, err = bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			b.View(func(tx *bolt.Tx) error {
				if v := schemaVersion(boltTx{tx}); v != 19 {
					t.Errorf("schema version %d after the refusal", v)
				}
				return nil
			})
			if after := dumpBuckets(t, b, bucketTeam, bucketTeamEmails, bucketTeamByEmail, bucketPeople); !slices.Equal(after, before) {
				t.Errorf("the refusal changed the records:\n%q\nwas\n%q", after, before)
			}
		})
	}
}

// writeTestKey writes the test sealer's key beside the file at path.
func writeTestKey(path string) {
	os.WriteFile(filepath.Join(filepath.Dir(path), SecretKeyFileName), []byte(hex.EncodeToString(bytes.Repeat([]byte{1}, 32))), 0o600)
}

// dumpBuckets is every key and value of the named buckets of b.
func dumpBuckets(t *testing.T, b *bolt.DB, names ...[]byte) []string {
	t.Helper()
	var out []string
	b.View(func(tx *bolt.Tx) error {
		for _, n := range names {
			tx.Bucket(n).ForEach(func(k, v []byte) error {
				out = append(out, string(n)+" "+string(k)+" "+string(v))
				return nil
			})
		}
		return nil
	})
	return out
}

// TestPostgresMigration20: the PostgreSQL engine runs v20 as the file
// does, in one transaction: the records above are re-keyed, and a
// conflict refuses the start and changes nothing.
func TestPostgresMigration20(t *testing.T) {
	pgtest.Shared(t)
	f := newV19People()
	open := nodeOpener(t)
	first := open()
	atV19 := func(fill func(tx kvTx)) {
		t.Helper()
		err := first.kv.Update(func(tx kvTx) error {
			fill(tx)
			return tx.Bucket(bucketMeta).Put(keySchemaVersion, putU64(19))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A conflict first: the start is refused, and so is the next.
	at := f.at
	atV19(func(tx kvTx) {
		m := TeamMember{ID: "c1", AccountID: "a3", Email: "cy@exämple.org", Role: "admin", Status: "active", InvitedAt: at}
		putJSON(tx.Bucket(bucketTeam), join(m.AccountID, m.ID), m)
		m.ID, m.Email = "c2", "cy@xn--exmple-cua.org"
		putJSON(tx.Bucket(bucketTeam), join(m.AccountID, m.ID), m)
	})
	o := first.opts
	for range 2 {
		if _, err := Open(t.TempDir(), o); err == nil || !strings.Contains(err.Error(), "account a3 has 2 members whose addresses are one, cy@xn--exmple-cua.org") {
			t.Fatalf("a conflict on PostgreSQL: %v", err)
		}
	}
	if v, err := first.SchemaVersion(); v != 19 || err != nil {
		t.Errorf("schema version %d after the refusal, %v", v, err)
	}
	// Without them, the migration runs.
	atV19(func(tx kvTx) {
		tx.Bucket(bucketTeam).Delete(join("a3", "c1"))
		tx.Bucket(bucketTeam).Delete(join("a3", "c2"))
		f.fill(t, tx, first.seal)
	})
	first.Close()
	var logs bytes.Buffer
	o.Logger = notesLogger(&logs)
	db, err := Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, _ := db.SchemaVersion(); v != 20 {
		t.Errorf("schema version %d", v)
	}
	f.check(t, db)
	if !strings.Contains(logs.String(), "dashboard login old@bücher.example dropped") {
		t.Errorf("the log does not name the dropped login:\n%s", logs.String())
	}
}

// A start that migrated part of the way (18 to 19) before migration 20
// refused keeps its copy of the file: the copy is the way back to 18.
func TestMigration20RefusalKeepsACopyOfEarlierMigrations(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	b, path := openAt(t, 18)
	b.Update(func(tx *bolt.Tx) error {
		for _, m := range []TeamMember{
			{ID: "m1", AccountID: "a1", Email: "ann@exämple.org", Role: "admin", Status: "active", InvitedAt: at},
			{ID: "m2", AccountID: "a1", Email: "ann@xn--exmple-cua.org", Role: "viewer", Status: "invited", InvitedAt: at},
		} {
			putJSON(boltBucket{tx.Bucket(bucketTeam)}, join(m.AccountID, m.ID), m)
			tx.Bucket(bucketTeamEmails).Put(join(m.AccountID, m.Email), []byte(m.ID))
			tx.Bucket(bucketTeamByEmail).Put(join(m.Email, m.AccountID), []byte(m.ID))
		}
		return nil
	})
	b.Close()
	writeTestKey(path)
	if _, err := OpenFile(path, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "migration 20") {
		t.Fatalf("open: %v, want migration 20's refusal", err)
	}
	copies, _ := filepath.Glob(path + ".pre-migration-*")
	if len(copies) != 1 || !strings.HasPrefix(filepath.Base(copies[0]), FileName+".pre-migration-v18-") {
		t.Fatalf("copies %q, want the one made before migrating from 18", copies)
	}
}

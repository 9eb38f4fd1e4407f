package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func testSealer(t testing.TB) *sealer {
	t.Helper()
	s, err := newSealer(bytes.Repeat([]byte{1}, 32), "test.key")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// secretFixture is one secret of each class, random so that a byte scan
// cannot find it by chance.
type secretFixture struct {
	dkim []byte
	hook string
	prev string
	totp []byte // a dashboard person's TOTP key
}

func newSecretFixture() secretFixture {
	dkim := make([]byte, 600)
	rand.Read(dkim)
	w := make([]byte, 24)
	rand.Read(w)
	p := make([]byte, 24)
	rand.Read(p)
	totp := make([]byte, 20)
	rand.Read(totp)
	return secretFixture{dkim: dkim, hook: "whsec_" + hex.EncodeToString(w), prev: "whsec_" + hex.EncodeToString(p), totp: totp}
}

func (f secretFixture) person() Person {
	return Person{Email: "ann@example.com", PasswordHash: "$argon2id$x", TOTPSeed: f.totp}
}

// checkPerson checks the person's TOTP key reads back.
func (f secretFixture) checkPerson(t *testing.T, db *DB) {
	t.Helper()
	db.View(func(tx *Tx) error {
		p, err := tx.Person("ann@example.com")
		if err != nil || !bytes.Equal(p.TOTPSeed, f.totp) {
			t.Errorf("the TOTP key reads back as %x, %v", p.TOTPSeed, err)
		}
		return nil
	})
}

func (f secretFixture) domain() Domain {
	return Domain{ID: "d1", AccountID: "a1", Name: "x.test", Status: DomainPending,
		DKIMKeys: []DomainKey{{Selector: "s1", Algorithm: "rsa", PrivateKey: f.dkim, PublicKey: "pub"}}}
}

func (f secretFixture) webhook() Webhook {
	return Webhook{ID: "w1", AccountID: "a1", URL: "https://h.test/", Secret: f.hook, PreviousSecret: f.prev}
}

// clearForms are the ways a secret would show in the file if stored as it
// is: raw bytes, the base64 JSON gives []byte fields, hex.
func clearForms(secrets ...[]byte) [][]byte {
	var out [][]byte
	for _, s := range secrets {
		out = append(out, s, []byte(base64.StdEncoding.EncodeToString(s)), []byte(hex.EncodeToString(s)))
	}
	return out
}

// assertNoClear fails when the file at path holds any of the secrets in a
// clear form.
func assertNoClear(t *testing.T, path string, secrets ...[]byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range clearForms(secrets...) {
		// A 16-byte window is enough to tell; the whole value might be
		// split across pages.
		if bytes.Contains(raw, form[:16]) {
			t.Errorf("%s holds a secret in clear (%q…)", filepath.Base(path), form[:16])
		}
	}
}

func (f secretFixture) check(t *testing.T, db *DB) {
	t.Helper()
	err := db.View(func(tx *Tx) error {
		d, err := tx.Domain("a1", "d1")
		if err != nil {
			return err
		}
		if !bytes.Equal(d.DKIMKeys[0].PrivateKey, f.dkim) {
			t.Error("DKIM private key does not read back")
		}
		w, err := tx.Webhook("a1", "w1")
		if err != nil {
			return err
		}
		if w.Secret != f.hook || w.PreviousSecret != f.prev {
			t.Errorf("webhook secrets read back as %q, %q", w.Secret, w.PreviousSecret)
		}
		list, _, err := tx.Webhooks("a1", ListOptions{Limit: 10})
		if err != nil || len(list) != 1 || list[0].Secret != f.hook {
			t.Errorf("webhook list: %+v, %v", list, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func serverSecret(t *testing.T, db *DB) []byte {
	t.Helper()
	var s []byte
	if err := db.View(func(tx *Tx) (err error) { s, err = tx.ServerSecret(); return err }); err != nil {
		t.Fatal(err)
	}
	if len(s) != 32 {
		t.Fatalf("server secret of %d bytes", len(s))
	}
	return s
}

func TestSecretsAreSealedInTheFileAndItsBackups(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	f := newSecretFixture()
	err = db.Update(func(tx *Tx) error {
		if err := tx.InsertDomain(f.domain()); err != nil {
			return err
		}
		if err := tx.PutPerson(f.person()); err != nil {
			return err
		}
		return tx.PutWebhook(f.webhook())
	})
	if err != nil {
		t.Fatal(err)
	}
	f.check(t, db)
	f.checkPerson(t, db)
	server := serverSecret(t, db)
	backup := filepath.Join(t.TempDir(), "backup.db")
	if _, err := db.Backup(backup); err != nil {
		t.Fatal(err)
	}
	db.Close()

	keyFile := filepath.Join(dir, SecretKeyFileName)
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	secrets := [][]byte{f.dkim, []byte(f.hook), []byte(f.prev), server, f.totp}
	assertNoClear(t, filepath.Join(dir, FileName), secrets...)
	assertNoClear(t, backup, secrets...)

	again, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	f.check(t, again)
	f.checkPerson(t, again)
	if !bytes.Equal(serverSecret(t, again), server) {
		t.Error("server secret changed across a restart")
	}
}

func TestWrongOrMissingKeyRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	keyFile := filepath.Join(dir, SecretKeyFileName)
	good, _ := os.ReadFile(keyFile)

	os.Remove(keyFile)
	_, err = Open(dir, DefaultOptions())
	if !errors.Is(err, ErrSecretKey) || !strings.Contains(err.Error(), keyFile) {
		t.Fatalf("missing key: %v", err)
	}
	if _, serr := os.Stat(keyFile); serr == nil {
		t.Fatal("a new key file was made for a database whose secrets are sealed")
	}

	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(newKey())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, DefaultOptions())
	if !errors.Is(err, ErrSecretKey) || !strings.Contains(err.Error(), keyFile) || !strings.Contains(err.Error(), "--secret-key-file") {
		t.Fatalf("wrong key: %v", err)
	}

	os.WriteFile(keyFile, good, 0o600)
	db, err = Open(dir, DefaultOptions())
	if err != nil {
		t.Fatalf("right key: %v", err)
	}
	db.Close()
}

func TestKeyFileIsNotCreatedWhenNotAllowed(t *testing.T) {
	dir := t.TempDir()
	o := DefaultOptions()
	o.CreateSecretKey = false
	if _, err := Open(dir, o); !errors.Is(err, ErrSecretKey) {
		t.Fatalf("open without a key file: %v", err)
	}
	elsewhere := filepath.Join(t.TempDir(), "k")
	os.WriteFile(elsewhere, []byte(hex.EncodeToString(newKey())), 0o600)
	o.SecretKeyFile = elsewhere
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if db.SecretKeyFile() != elsewhere || db.SecretKeyCreated() {
		t.Errorf("key file %s, created %t", db.SecretKeyFile(), db.SecretKeyCreated())
	}
	db.Close()
}

func TestSealedValueOpensOnlyWhereItWasSealed(t *testing.T) {
	s := testSealer(t)
	v := s.seal("dkim/d1/s1", []byte("key"))
	if got, err := s.open("dkim/d1/s1", v); err != nil || string(got) != "key" {
		t.Fatalf("open: %q, %v", got, err)
	}
	if _, err := s.open("dkim/d2/s1", v); err == nil {
		t.Error("a value moved to another record opened")
	}
	other, _ := newSealer(bytes.Repeat([]byte{2}, 32), "other.key")
	if _, err := other.open("dkim/d1/s1", v); !errors.Is(err, ErrSecretKey) {
		t.Errorf("another key: %v", err)
	}
}

func TestMigration9SealsExistingSecrets(t *testing.T) {
	b, path := openAt(t, 8)
	f := newSecretFixture()
	// What a version-8 binary stored: every secret as it is.
	var server []byte
	err := b.Update(func(tx *bolt.Tx) error {
		dj, _ := json.Marshal(f.domain())
		wj, _ := json.Marshal(f.webhook())
		server = append([]byte(nil), tx.Bucket(bucketMeta).Get(keyServerSecret)...)
		if err := tx.Bucket(bucketDomains).Put([]byte("d1"), dj); err != nil {
			return err
		}
		return tx.Bucket(bucketWebhooks).Put(join("a1", "w1"), wj)
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	secrets := [][]byte{f.dkim, []byte(f.hook), []byte(f.prev), server, f.totp}
	raw, _ := os.ReadFile(path)
	if !bytes.Contains(raw, []byte(f.hook)) {
		t.Fatal("fixture: the version-8 file should hold the webhook secret in clear")
	}

	db, err := OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := db.SchemaVersion(); v != LatestSchemaVersion() {
		t.Fatalf("version %d", v)
	}
	if !db.SecretKeyCreated() {
		t.Error("no key file created for the sealing")
	}
	f.check(t, db)
	if !bytes.Equal(serverSecret(t, db), server) {
		t.Error("the server secret changed: links already sent would stop verifying")
	}
	pre := db.PreMigrationCopy()
	db.Close()

	// The old pages are gone from the file, not only unused.
	assertNoClear(t, path, secrets...)

	// The copy taken before the migration is the version-8 file: the way back.
	if !strings.HasPrefix(filepath.Base(pre), FileName+".pre-migration-v8-") {
		t.Fatalf("pre-migration copy %q", pre)
	}
	old, err := bolt.Open(pre, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	old.View(func(tx *bolt.Tx) error {
		if v := schemaVersion(boltTx{tx}); v != 8 {
			t.Errorf("pre-migration copy at version %d", v)
		}
		return nil
	})

	// A start that migrates nothing takes no copy.
	db, err = OpenFile(path, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.PreMigrationCopy() != "" {
		t.Error("copy taken without a migration")
	}
}

func TestNewerSchemaIsRefusedWithoutACopy(t *testing.T) {
	b, path := openAt(t, LatestSchemaVersion())
	b.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, putU64(uint64(LatestSchemaVersion()+1)))
	})
	b.Close()
	os.WriteFile(filepath.Join(filepath.Dir(path), SecretKeyFileName), []byte(hex.EncodeToString(bytes.Repeat([]byte{1}, 32))), 0o600)
	_, err := OpenFile(path, DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("newer than this build supports (%d): upgrade mailbolt", LatestSchemaVersion())) {
		t.Fatalf("newer schema: %v", err)
	}
	if m, _ := filepath.Glob(path + ".pre-migration-*"); len(m) != 0 {
		t.Errorf("copies of a file not migrated: %v", m)
	}
}

func TestRotateSecretKey(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	f := newSecretFixture()
	db.Update(func(tx *Tx) error {
		if err := tx.InsertDomain(f.domain()); err != nil {
			return err
		}
		if err := tx.PutPerson(f.person()); err != nil {
			return err
		}
		return tx.PutWebhook(f.webhook())
	})
	server := serverSecret(t, db)
	before := filepath.Join(t.TempDir(), "before.db")
	if _, err := db.Backup(before); err != nil {
		t.Fatal(err)
	}
	keyFile := db.SecretKeyFile()
	oldKey, _ := os.ReadFile(keyFile)

	if _, err := RotateSecretKey(dir, DefaultOptions(), time.Now()); !errors.Is(err, ErrLocked) {
		t.Fatalf("rotate while open: %v", err)
	}
	db.Close()

	at := time.Date(2026, 11, 22, 3, 20, 31, 0, time.UTC)
	kept, err := RotateSecretKey(dir, DefaultOptions(), at)
	if err != nil {
		t.Fatal(err)
	}
	if kept != keyFile+".old-20261122T032031Z" {
		t.Errorf("kept %q", kept)
	}
	if k, _ := os.ReadFile(kept); !bytes.Equal(k, oldKey) {
		t.Error("the kept file is not the old key")
	}
	if k, _ := os.ReadFile(keyFile); bytes.Equal(k, oldKey) {
		t.Fatal("the key file still holds the old key")
	}
	if fi, _ := os.Stat(keyFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("new key file mode %v", fi.Mode())
	}

	db, err = Open(dir, DefaultOptions())
	if err != nil {
		t.Fatalf("open after rotation: %v", err)
	}
	f.check(t, db)
	f.checkPerson(t, db)
	if !bytes.Equal(serverSecret(t, db), server) {
		t.Error("rotation changed the server secret: links already sent would stop verifying")
	}
	db.Close()

	// A backup from before the rotation opens with the kept key, not the new one.
	if err := CheckSecretKey(before, keyFile); !errors.Is(err, ErrSecretKey) {
		t.Errorf("old backup with the new key: %v", err)
	}
	if err := CheckSecretKey(before, kept); err != nil {
		t.Errorf("old backup with the kept key: %v", err)
	}
}

// A second rotation in the same second keeps its old key under the next
// free name instead of failing on the first one's.
func TestRotateTwiceInOneSecond(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	keyFile := db.SecretKeyFile()
	db.Close()
	at := time.Date(2026, 11, 22, 3, 20, 31, 0, time.UTC)
	var keys [][]byte
	for i, want := range []string{".old-20261122T032031Z", ".old-20261122T032031Z-2"} {
		before, _ := os.ReadFile(keyFile)
		kept, err := RotateSecretKey(dir, DefaultOptions(), at)
		if err != nil {
			t.Fatalf("rotation %d: %v", i+1, err)
		}
		if kept != keyFile+want {
			t.Errorf("rotation %d kept %q, want %q", i+1, kept, keyFile+want)
		}
		if k, _ := os.ReadFile(kept); !bytes.Equal(k, before) {
			t.Errorf("rotation %d: the kept file is not the key it replaced", i+1)
		}
		keys = append(keys, before)
	}
	if bytes.Equal(keys[0], keys[1]) {
		t.Error("the second rotation kept the same key as the first")
	}
	db, err = Open(dir, DefaultOptions())
	if err != nil {
		t.Fatalf("open after two rotations: %v", err)
	}
	db.Close()
}

func TestInterruptedRotationIsFinishedAtOpen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	f := newSecretFixture()
	db.Update(func(tx *Tx) error { return tx.PutWebhook(f.webhook()) })
	// The state a crash leaves after the commit, before the rename.
	key := newKey()
	to, _ := newSealer(key, db.SecretKeyFile())
	if err := db.kv.Update(func(tx kvTx) error { return resealAll(tx, db.seal, to) }); err != nil {
		t.Fatal(err)
	}
	keyFile := db.SecretKeyFile()
	db.Close()
	if err := writeKeyFile(keyFile+".new", key); err != nil {
		t.Fatal(err)
	}

	db, err = Open(dir, DefaultOptions())
	if err != nil {
		t.Fatalf("open after an interrupted rotation: %v", err)
	}
	defer db.Close()
	if got, _ := readKeyFile(keyFile); !bytes.Equal(got, key) {
		t.Error("the new key did not take the key file's place")
	}
	if _, err := os.Stat(keyFile + ".new"); err == nil {
		t.Error(".new left behind")
	}
}

func TestRestoreRefusesABackupTheKeyCannotOpen(t *testing.T) {
	src := t.TempDir()
	db, err := Open(src, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	f := newSecretFixture()
	db.Update(func(tx *Tx) error { return tx.PutWebhook(f.webhook()) })
	backup := filepath.Join(t.TempDir(), "b.db")
	if _, err := db.Backup(backup); err != nil {
		t.Fatal(err)
	}
	srcKey := db.SecretKeyFile()
	db.Close()

	// Another installation, with its own key.
	dst := t.TempDir()
	other, err := Open(dst, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	_, err = Restore(backup, dst, "", time.Now())
	if !errors.Is(err, ErrSecretKey) || !strings.Contains(err.Error(), filepath.Join(dst, SecretKeyFileName)) {
		t.Fatalf("restore under a foreign key: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dst, FileName+".pre-restore-*")); len(m) != 0 {
		t.Error("a refused restore changed the data dir")
	}
	// No key file at all: refused, naming the file.
	empty := t.TempDir()
	if _, err := Restore(backup, empty, "", time.Now()); !errors.Is(err, ErrSecretKey) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("restore without a key file: %v", err)
	}
	// With the key kept with the backup, it goes through and opens.
	if _, err := Restore(backup, dst, srcKey, time.Now()); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.SecretKeyFile = srcKey
	db, err = Open(dst, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *Tx) error {
		if w, err := tx.Webhook("a1", "w1"); err != nil || w.Secret != f.hook {
			t.Errorf("restored webhook: %+v, %v", w, err)
		}
		return nil
	})
}

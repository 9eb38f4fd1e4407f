package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// resealFunc gets one stored secret with its context and returns what to
// store in its place, or nil to leave it as it is.
type resealFunc func(context string, stored []byte) ([]byte, error)

// secretClass is one kind of secret stored sealed. each calls fn for every
// stored (non-empty) value of the class.
type secretClass struct {
	name string
	each func(tx kvTx, fn resealFunc) error
}

// secretClasses is every kind of secret the database holds sealed: the
// one list that the sealing migration, rotation and the restore check
// walk. A new kind of secret (TOTP seeds, session secrets, ACME keys) is
// sealed by its accessors with tx.sealValue and gets its row here.
var secretClasses = []secretClass{
	{"DKIM private keys", eachDKIMKey},
	{"webhook signing secrets", eachWebhookSecret},
	{"the server secret", eachServerSecret},
	{"dashboard TOTP keys", eachTOTPSeed},
}

func dkimContext(domainID, selector string) string  { return "dkim/" + domainID + "/" + selector }
func webhookContext(webhookID, field string) string { return "webhook/" + webhookID + "/" + field }

const ctxServerSecret = "meta/server_secret"

func eachDKIMKey(tx kvTx, fn resealFunc) error {
	b := tx.Bucket(bucketDomains)
	changed := map[string]Domain{}
	err := b.ForEach(func(k, v []byte) error {
		var d Domain
		if err := decodeJSON(k, v, &d); err != nil {
			return err
		}
		for i, key := range d.DKIMKeys {
			if len(key.PrivateKey) == 0 {
				continue
			}
			nv, err := fn(dkimContext(d.ID, key.Selector), key.PrivateKey)
			if err != nil {
				return fmt.Errorf("domain %s: %w", d.Name, err)
			}
			if nv != nil {
				d.DKIMKeys[i].PrivateKey = nv
				changed[string(k)] = d
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k, d := range changed {
		if err := putJSON(b, []byte(k), d); err != nil {
			return err
		}
	}
	return nil
}

func eachWebhookSecret(tx kvTx, fn resealFunc) error {
	b := tx.Bucket(bucketWebhooks)
	changed := map[string]Webhook{}
	err := b.ForEach(func(k, v []byte) error {
		var w Webhook
		if err := decodeJSON(k, v, &w); err != nil {
			return err
		}
		for _, f := range []struct {
			name string
			val  *string
		}{{"secret", &w.Secret}, {"previous_secret", &w.PreviousSecret}} {
			if *f.val == "" {
				continue
			}
			nv, err := fn(webhookContext(w.ID, f.name), []byte(*f.val))
			if err != nil {
				return fmt.Errorf("webhook %s: %w", w.ID, err)
			}
			if nv != nil {
				*f.val = string(nv)
				changed[string(k)] = w
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k, w := range changed {
		if err := putJSON(b, []byte(k), w); err != nil {
			return err
		}
	}
	return nil
}

func eachTOTPSeed(tx kvTx, fn resealFunc) error {
	b := tx.Bucket(bucketPeople)
	if b == nil {
		return nil // before schema v15
	}
	changed := map[string]Person{}
	err := b.ForEach(func(k, v []byte) error {
		var p Person
		if err := decodeJSON(k, v, &p); err != nil {
			return err
		}
		for _, f := range p.totpFields() {
			if len(*f.val) == 0 {
				continue
			}
			nv, err := fn(personContext(p.Email, f.name), *f.val)
			if err != nil {
				return fmt.Errorf("person %s: %w", p.Email, err)
			}
			if nv != nil {
				*f.val = nv
				changed[string(k)] = p
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k, p := range changed {
		if err := putJSON(b, []byte(k), p); err != nil {
			return err
		}
	}
	return nil
}

func eachServerSecret(tx kvTx, fn resealFunc) error {
	meta := tx.Bucket(bucketMeta)
	v := meta.Get(keyServerSecret)
	if len(v) == 0 {
		return nil
	}
	nv, err := fn(ctxServerSecret, append([]byte(nil), v...))
	if err != nil || nv == nil {
		return err
	}
	return meta.Put(keyServerSecret, nv)
}

// sealAll seals every secret stored in clear and writes the key check:
// schema migration 9.
func sealAll(tx kvTx, s *sealer) error {
	for _, c := range secretClasses {
		err := c.each(tx, func(context string, clear []byte) ([]byte, error) { return s.seal(context, clear), nil })
		if err != nil {
			return fmt.Errorf("seal %s: %w", c.name, err)
		}
	}
	return tx.Bucket(bucketMeta).Put(keySecretKeyCheck, s.checkValue())
}

// resealAll opens every sealed secret with from and seals it with to, and
// replaces the key check: a rotation, in the caller's one transaction.
func resealAll(tx kvTx, from, to *sealer) error {
	for _, c := range secretClasses {
		err := c.each(tx, func(context string, sealed []byte) ([]byte, error) {
			clear, err := from.open(context, sealed)
			if err != nil {
				return nil, err
			}
			return to.seal(context, clear), nil
		})
		if err != nil {
			return fmt.Errorf("re-seal %s: %w", c.name, err)
		}
	}
	return tx.Bucket(bucketMeta).Put(keySecretKeyCheck, to.checkValue())
}

// openAll opens every sealed secret with s, changing nothing: the proof
// that s is the key of a database or a backup.
func openAll(tx kvTx, s *sealer) error {
	for _, c := range secretClasses {
		err := c.each(tx, func(context string, sealed []byte) ([]byte, error) {
			_, err := s.open(context, sealed)
			return nil, err
		})
		if err != nil {
			return fmt.Errorf("open %s: %w", c.name, err)
		}
	}
	return nil
}

// sealValue seals a secret on its way into a record. On the shared engine
// it first checks that the node's key is still the database's
// (keyCurrent).
func (tx *Tx) sealValue(context string, clear []byte) ([]byte, error) {
	if tx.seal == nil {
		return nil, fmt.Errorf("%w: no secret key was loaded to seal %s", ErrSecretKey, context)
	}
	if _, shared := tx.btx.(*pgTx); shared {
		if err := tx.keyCurrent(); err != nil {
			return nil, fmt.Errorf("%w; %s is not sealed under the old key", err, context)
		}
	}
	return tx.seal.seal(context, clear), nil
}

// keyCurrent reports ErrSecretKey when the database's key check is not
// sealed under tx's key. On the shared engine a rotation may have
// re-sealed every secret under a new key since this node read its own (it
// cannot while the node holds its node lock, but that lock is lost with
// its connection until the node takes it again: nodes_pg.go). In a write
// transaction what it finds stays true until the commit: write
// transactions run one at a time across nodes, and a rotation is one.
// The embedded engine needs no such check: a rotation needs its file, which
// a running server holds locked.
func (tx *Tx) keyCurrent() error {
	check := tx.bucket(bucketMeta).Get(keySecretKeyCheck)
	if len(check) == 0 {
		return nil // nothing is sealed yet (schema 8 or older)
	}
	if got, err := tx.seal.open(ctxCheck, check); err == nil && string(got) == keyCheck {
		return nil
	}
	return fmt.Errorf("%w: the database's secret key was rotated after this node read %s, which holds the old key: "+
		"give this node the new key file and restart it", ErrSecretKey, tx.seal.path)
}

// openValue opens a secret read from a record.
func (tx *Tx) openValue(context string, sealed []byte) ([]byte, error) {
	return tx.seal.open(context, sealed)
}

// loadSecretKey reads (or, where allowed, creates) the key file and checks
// it against the database's key-check value. A read-only open without a
// key file gets no key: reading a secret then fails, nothing else does.
func (db *DB) loadSecretKey() error {
	db.keyFile = keyFilePath(db.path, db.opts)
	var check []byte
	err := db.kv.View(func(tx kvTx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			check = append([]byte(nil), meta.Get(keySecretKeyCheck)...)
			if len(check) == 0 {
				check = nil
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if db.opts.ReadOnly {
		if _, err := os.Stat(db.keyFile); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	db.seal, db.keyCreated, err = loadSealer(db.path, db.keyFile, check, db.opts.CreateSecretKey && !db.opts.ReadOnly)
	return err
}

// SecretKeyFile is the file the key sealing the database's secrets was
// read from: keep a copy of it with every backup.
func (db *DB) SecretKeyFile() string { return db.keyFile }

// SecretKeyCreated reports whether this Open created the key file.
func (db *DB) SecretKeyCreated() bool { return db.keyCreated }

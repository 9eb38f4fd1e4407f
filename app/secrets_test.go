package app

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// TestLinksSignedBeforeARotationStillVerify: rotating the secret key
// re-seals the server secret without changing it, so tracking and
// unsubscribe links and bounce addresses already sent keep verifying.
func TestLinksSignedBeforeARotationStillVerify(t *testing.T) {
	dir, sopts := t.TempDir(), storagetest.Options(t)
	open := func() *App {
		db, err := storage.Open(dir, sopts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return mustNew(t, db, DefaultOptions())
	}
	a := open()
	tok := linkToken{kind: tokenUnsubscribe, accountID: uuid.NewString(), messageID: uuid.NewString(), index: 2}
	signed := a.signToken(tok)
	rpKey := a.returnPathKey
	a.db.Close()

	if _, err := storage.RotateSecretKey(dir, sopts, time.Now()); err != nil {
		t.Fatal(err)
	}
	b := open()
	if got, ok := b.verifyToken(tokenUnsubscribe, signed); !ok || got != tok {
		t.Errorf("a link signed before the rotation does not verify: %+v %t", got, ok)
	}
	if !bytes.Equal(b.returnPathKey, rpKey) {
		t.Error("the bounce address key changed with the rotation")
	}
}

package app

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"mailbolt/storage"
)

// MaxIdempotencyKeyLen bounds the Idempotency-Key header.
const MaxIdempotencyKeyLen = 255

// Response is a complete answer to a request, as stored for replay.
type Response struct {
	Status int
	Header map[string][]string
	Body   []byte
}

// Fingerprint identifies a request's content for idempotency: method, path
// and body.
func Fingerprint(method, path string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// Idempotent runs a write request at most once per (API key, idempotency
// key) within IdempotencyTTL; a caller without an API key is 403 FORBIDDEN. A repeat with the same fingerprint gets the
// stored answer and replayed=true; a different fingerprint is 409
// IDEMPOTENCY_CONFLICT. A repeat that arrives while the first is still
// running waits for it, so the request never runs twice. Answers that say
// the request may succeed later are not stored, so a retry with the same key
// runs again: 401 and 403 (the caller was refused: nothing ran), 429 and any
// 5xx. The stored answer is sealed with a key derived from the API key's
// secret (see seal).
//
// run gets p with an answer slot: a write use case called with it stores
// the answer (rendered by the function given to Answer) in the transaction
// of its effect, so that a crash cannot leave the effect committed and the
// answer lost (see update). An answer that no such transaction stored (the
// request failed before writing anything) is stored after run returns.
func (a *App) Idempotent(ctx context.Context, p Principal, secret, key string, fingerprint []byte, run func(Principal) Response) (resp Response, replayed bool, e error) {
	return a.idempotent(ctx, p, secret, key, fingerprint, run, storable)
}

// idempotent is Idempotent with the rule for which answers that no
// transaction stored are kept afterwards: keep(status). SMTP submission
// keeps none (only an accepted message's answer, stored with it).
//
// Within one node, a repeat that arrives while the first is running waits
// on the in-memory marker. Nodes sharing one database (storage.DB.Shared)
// also write an in-flight marker (IdempotencyRecord.Pending) in a write
// transaction that first checks for a record: write transactions run one
// at a time across nodes, so one node takes the key and a duplicate on
// another sees the marker and polls until the answer is stored, then
// replays it. The effect's own transaction checks again (answerSlot.put):
// should the marker have expired and another node run the request
// meanwhile, the late effect is rolled back and the stored answer replayed.
func (a *App) idempotent(ctx context.Context, p Principal, secret, key string, fingerprint []byte, run func(Principal) Response,
	keep func(status int) bool) (resp Response, replayed bool, e error) {
	apiKeyID := p.KeyID
	if apiKeyID == "" {
		// Records are kept per key; callers without one would share a slot.
		return Response{}, false, NewError(CodeForbidden, "idempotency keys are kept per API key, and this "+
			p.Kind.noun()+" has none")
	}
	busyKey := apiKeyID + "\x00" + key
	for {
		a.idemMu.Lock()
		busy, ok := a.inflight[busyKey]
		if !ok {
			a.inflight[busyKey] = make(chan struct{})
			a.idemMu.Unlock()
			break
		}
		a.idemMu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return Response{}, false, gaveUpWaiting()
		}
	}
	defer func() {
		a.idemMu.Lock()
		close(a.inflight[busyKey])
		delete(a.inflight, busyKey)
		a.idemMu.Unlock()
	}()

	for {
		resp, replayed, e, again := a.idempotentOnce(ctx, p, apiKeyID, secret, key, fingerprint, run, keep)
		if !again {
			return resp, replayed, e
		}
	}
}

// idemPoll is how often a duplicate polls for the answer of a request
// another node is running.
const idemPoll = 20 * time.Millisecond

// IdempotencyInFlight bounds how long the in-flight marker of a request
// holds a key across nodes: a duplicate waits at most this long for a node
// that died while running the request, then runs it itself.
const IdempotencyInFlight = time.Minute

func gaveUpWaiting() error {
	return &Error{Code: CodeServiceUnavailable, Message: "gave up waiting for the first request with this Idempotency-Key"}
}

// idempotentOnce is one pass of idempotent, once this node's marker is
// held: replay a stored answer, wait for another node's, or take the key
// and run. again asks for another pass: the answer this pass waited for
// was not kept, or another node stored its answer first.
func (a *App) idempotentOnce(ctx context.Context, p Principal, apiKeyID, secret, key string, fingerprint []byte,
	run func(Principal) Response, keep func(status int) bool) (resp Response, replayed bool, e error, again bool) {
	shared := a.db.Shared()
	token := ""
	if shared {
		token = a.db.Node() + "/" + NewID()
	}
	for {
		var rec storage.IdempotencyRecord
		err := a.db.View(func(tx *storage.Tx) error {
			var err error
			rec, err = tx.IdempotencyRecord(apiKeyID, key)
			return err
		})
		now := a.Now()
		switch {
		case err == nil && rec.ExpiresAt.After(now):
			if !bytes.Equal(rec.Fingerprint, fingerprint) {
				return Response{}, false, &Error{Code: CodeIdempotencyConflict,
					Message: "this Idempotency-Key was already used with a different request"}, false
			}
			if rec.Pending == "" {
				resp, err := open(secret, rec)
				if err != nil {
					return Response{}, false, Internal(err), false
				}
				return resp, true, nil, false
			}
			// Another node is running the request: wait for its answer.
			select {
			case <-ctx.Done():
				return Response{}, false, gaveUpWaiting(), false
			case <-time.After(idemPoll):
			}
			continue
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return Response{}, false, Internal(err), false
		}
		if !shared {
			break
		}
		took := false
		err = a.db.Update(func(tx *storage.Tx) error {
			took = false
			cur, err := tx.IdempotencyRecord(apiKeyID, key)
			if err == nil && cur.ExpiresAt.After(now) {
				return nil // another node took the key first
			}
			took = true
			return tx.PutIdempotencyRecord(apiKeyID, key, storage.IdempotencyRecord{Fingerprint: fingerprint,
				Pending: token, CreatedAt: now, ExpiresAt: now.Add(IdempotencyInFlight)})
		})
		if err != nil {
			return Response{}, false, Internal(err), false
		}
		if took {
			break
		}
	}
	marked := shared // our in-flight marker is in the database
	defer func() {
		if !marked {
			return
		}
		// The request ended without a kept answer: free the key, so a
		// retry runs it.
		if err := a.db.Update(func(tx *storage.Tx) error { return tx.DropIdempotencyMarker(apiKeyID, key, token) }); err != nil {
			a.log.Error("drop the in-flight idempotency marker", "api_key_id", apiKeyID, "err", err)
		}
	}()

	slot := &answerSlot{apiKeyID: apiKeyID, key: key, secret: secret, fingerprint: fingerprint, ttl: a.opts.IdempotencyTTL, token: token}
	p.idem = slot
	resp = run(p)
	if slot.stored != nil {
		// Committed with the effect: that is the answer every retry gets.
		marked = false
		return *slot.stored, false, nil, false
	}
	if slot.taken {
		// Another node stored an answer first; this effect was rolled back.
		marked = false
		return Response{}, false, nil, true
	}
	if !keep(resp.Status) {
		return resp, false, nil, false
	}
	sealed, err := seal(secret, resp)
	if err != nil {
		a.log.Error("seal idempotent answer", "api_key_id", apiKeyID, "err", err)
		return resp, false, nil, false
	}
	now := a.Now()
	rec := storage.IdempotencyRecord{Fingerprint: fingerprint, Status: resp.Status, Sealed: sealed,
		CreatedAt: now, ExpiresAt: now.Add(a.opts.IdempotencyTTL)}
	taken := false
	if err := a.db.Update(func(tx *storage.Tx) error {
		taken = false
		if idemTaken(tx, apiKeyID, key, token, now) {
			taken = true
			return nil
		}
		return tx.PutIdempotencyRecord(apiKeyID, key, rec)
	}); err != nil {
		// The request itself succeeded and is committed; only its replay
		// record is missing. Answer it rather than invite a second execution.
		a.log.Error("store idempotent answer", "api_key_id", apiKeyID, "err", err)
		return resp, false, nil, false
	}
	marked = false
	if taken {
		// Another node's answer came first (ours outlived its marker):
		// the first to complete fixes the answer (spec §8).
		return Response{}, false, nil, true
	}
	return resp, false, nil, false
}

// idemTaken reports whether another request holds (apiKeyID, key) in tx:
// a stored answer, or another request's in-flight marker, still valid at
// now. token is this request's marker ("" when it wrote none).
func idemTaken(tx *storage.Tx, apiKeyID, key, token string, now time.Time) bool {
	cur, err := tx.IdempotencyRecord(apiKeyID, key)
	if err != nil || !cur.ExpiresAt.After(now) {
		return false
	}
	return cur.Pending == "" || cur.Pending != token
}

// storable reports whether an answer with this status is kept for replay.
func storable(status int) bool {
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusTooManyRequests:
		return false
	}
	return status < 500
}

// sealKey derives the AES-256 key that protects stored answers from the API
// key's secret. The database holds only SHA-256(secret), from which this key
// cannot be computed.
func sealKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("mailbolt idempotency v1"))
	return m.Sum(nil)
}

type sealedAnswer struct {
	Header map[string][]string `json:"header,omitempty"`
	Body   []byte              `json:"body,omitempty"`
}

func gcm(secret string) (cipher.AEAD, error) {
	block, err := aes.NewCipher(sealKey(secret))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts an answer's headers and body with AES-256-GCM.
func seal(secret string, r Response) ([]byte, error) {
	plain, err := json.Marshal(sealedAnswer{Header: r.Header, Body: r.Body})
	if err != nil {
		return nil, err
	}
	aead, err := gcm(secret)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, plain, nil), nil
}

// open decrypts a stored answer.
func open(secret string, rec storage.IdempotencyRecord) (Response, error) {
	aead, err := gcm(secret)
	if err != nil {
		return Response{}, err
	}
	if len(rec.Sealed) < aead.NonceSize() {
		return Response{}, errors.New("stored answer is truncated")
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, rec.Sealed[:n], rec.Sealed[n:], nil)
	if err != nil {
		return Response{}, fmt.Errorf("open stored answer: %w", err)
	}
	var s sealedAnswer
	if err := json.Unmarshal(plain, &s); err != nil {
		return Response{}, err
	}
	return Response{Status: rec.Status, Header: s.Header, Body: s.Body}, nil
}

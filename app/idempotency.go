package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"

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
// key) within IdempotencyTTL. A repeat with the same fingerprint gets the
// stored answer and replayed=true; a different fingerprint is 409
// IDEMPOTENCY_CONFLICT. A repeat that arrives while the first is still
// running waits for it, so the request never runs twice. Answers with status
// 429 or 503 are not stored, so a retry can succeed.
func (a *App) Idempotent(ctx context.Context, apiKeyID, key string, fingerprint []byte, run func() Response) (resp Response, replayed bool, e *Error) {
	slot := apiKeyID + "\x00" + key
	for {
		a.idemMu.Lock()
		busy, ok := a.inflight[slot]
		if !ok {
			a.inflight[slot] = make(chan struct{})
			a.idemMu.Unlock()
			break
		}
		a.idemMu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return Response{}, false, &Error{Status: http.StatusServiceUnavailable, Code: CodeServiceUnavailable,
				Message: "gave up waiting for the first request with this Idempotency-Key"}
		}
	}
	defer func() {
		a.idemMu.Lock()
		close(a.inflight[slot])
		delete(a.inflight, slot)
		a.idemMu.Unlock()
	}()

	var rec storage.IdempotencyRecord
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		rec, err = tx.IdempotencyRecord(apiKeyID, key)
		return err
	})
	switch {
	case err == nil && rec.ExpiresAt.After(a.Now()):
		if !bytes.Equal(rec.Fingerprint, fingerprint) {
			return Response{}, false, &Error{Status: http.StatusConflict, Code: CodeIdempotencyConflict,
				Message: "this Idempotency-Key was already used with a different request"}
		}
		return Response{Status: rec.Status, Header: rec.Header, Body: rec.Body}, true, nil
	case err != nil && !errors.Is(err, storage.ErrNotFound):
		return Response{}, false, Internal(err)
	}

	resp = run()
	if resp.Status == http.StatusTooManyRequests || resp.Status == http.StatusServiceUnavailable {
		return resp, false, nil
	}
	now := a.Now()
	rec = storage.IdempotencyRecord{Fingerprint: fingerprint, Status: resp.Status, Header: resp.Header,
		Body: resp.Body, CreatedAt: now, ExpiresAt: now.Add(a.opts.IdempotencyTTL)}
	if err := a.db.Update(func(tx *storage.Tx) error { return tx.PutIdempotencyRecord(apiKeyID, key, rec) }); err != nil {
		// The request itself succeeded and is committed; only its replay
		// record is missing. Answer it rather than invite a second execution.
		a.log.Error("store idempotent answer", "api_key_id", apiKeyID, "err", err)
	}
	return resp, false, nil
}

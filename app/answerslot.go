package app

import (
	"errors"
	"fmt"
	"time"

	"mailbolt/storage"
)

// answerSlot is where a write use case called for an idempotent request
// leaves the request's answer, inside the transaction that commits the
// use case's effect. Idempotent makes one per request and hands it to the
// use case in the Principal; the web layer says beforehand, with Answer,
// how the use case's result becomes the HTTP answer.
//
// Storing the answer with the effect is what makes a request run exactly
// once across a crash: either both are on disk (a retry replays) or neither
// is (a retry runs the request, which never took effect).
type answerSlot struct {
	apiKeyID, key, secret string
	fingerprint           []byte
	ttl                   time.Duration

	// render turns the use case's result into the answer; nil until the
	// web layer calls Answer.
	render func(result any) (Response, error)
	// pending is the answer put in the transaction now running (it may be
	// re-run); stored is set once that transaction is committed.
	pending, stored *Response
	// token names this request's in-flight marker on a shared database
	// ("" otherwise); taken is set when the effect's transaction found the
	// key held by another request (another node's answer) and rolled back.
	token string
	taken bool
}

// errAnswerTaken rolls back an idempotent request's effect when another
// node stored the key's answer first; idempotent replays that answer
// instead, so callers never see this error.
var errAnswerTaken = &Error{Code: CodeIdempotencyConflict,
	Message: "another request with this Idempotency-Key was executed first"}

// errAnswerStored guards a use case that would store two answers for one
// request: the second effect would not be covered by the first answer.
var errAnswerStored = errors.New("idempotent answer: already stored by an earlier transaction of this request")

// Answer says how the result of the write use case that p calls becomes the
// request's answer, so that an idempotent request stores that answer in the
// transaction of its effect. render must be a pure function of the result:
// it runs inside the transaction, possibly more than once. Without an
// idempotent request in p, Answer does nothing.
func Answer[T any](p Principal, render func(result T) Response) {
	if p.idem == nil {
		return
	}
	p.idem.render = func(result any) (Response, error) {
		r, ok := result.(T)
		if !ok {
			var want T
			return Response{}, fmt.Errorf("idempotent answer: the use case returned %T, the route renders %T", result, want)
		}
		return render(r), nil
	}
}

// put stores the answer rendered from result in tx. It does nothing for a
// request without an idempotency key (a nil slot), for a route that
// registered no renderer, and for an answer that is never kept (storable).
func (s *answerSlot) put(tx *storage.Tx, result any, now time.Time) error {
	if s == nil || s.render == nil {
		return nil
	}
	if s.stored != nil {
		return errAnswerStored
	}
	s.pending, s.taken = nil, false
	if idemTaken(tx, s.apiKeyID, s.key, s.token, now) {
		s.taken = true
		return errAnswerTaken
	}
	resp, err := s.render(result)
	if err != nil {
		return err
	}
	if !storable(resp.Status) {
		return nil
	}
	sealed, err := seal(s.secret, resp)
	if err != nil {
		return fmt.Errorf("seal idempotent answer: %w", err)
	}
	rec := storage.IdempotencyRecord{Fingerprint: s.fingerprint, Status: resp.Status, Sealed: sealed,
		CreatedAt: now, ExpiresAt: now.Add(s.ttl)}
	if err := tx.PutIdempotencyRecord(s.apiKeyID, s.key, rec); err != nil {
		return err
	}
	s.pending = &resp
	return nil
}

// committed records that the transaction holding the pending answer is on
// disk.
func (s *answerSlot) committed() {
	if s != nil && s.pending != nil {
		s.stored, s.pending = s.pending, nil
	}
}

// update is the write transaction of a use case that p calls: it runs fn
// and, when p's request carries an Idempotency-Key, stores the request's
// answer (rendered from *result as fn left it) in the same transaction. A
// use case commits its effect with update once, in its last write; fn
// follows storage.DB.Update's rule (it may run more than once, no effects
// outside tx). A use case whose answer has no body passes new(struct{}).
//
// act names the change for the audit log: its entry is appended in the same
// transaction, after fn, so a change that fails leaves none (noAudit for
// what is not a change of the account's setup: sending mail, grading).
func update[T any](a *App, p Principal, act action, result *T, fn func(tx *storage.Tx) error) error {
	err := a.db.Update(func(tx *storage.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if err := a.audit(tx, p, act); err != nil {
			return err
		}
		return p.idem.put(tx, *result, a.Now())
	})
	if err != nil {
		if p.idem != nil {
			p.idem.pending = nil
		}
		return err
	}
	p.idem.committed()
	return nil
}

// adaptAnswer lets a use case that commits through another one (one message
// through a batch of one) give the route's renderer the result it expects:
// f turns the inner use case's result into it.
func adaptAnswer[T any](p Principal, f func(T) any) {
	if p.idem == nil || p.idem.render == nil {
		return
	}
	outer := p.idem.render
	p.idem.render = func(result any) (Response, error) {
		r, ok := result.(T)
		if !ok {
			var want T
			return Response{}, fmt.Errorf("idempotent answer: the use case returned %T, want %T", result, want)
		}
		return outer(f(r))
	}
}

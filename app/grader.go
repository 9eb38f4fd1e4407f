package app

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"mailbolt/grader"
	"mailbolt/storage"
)

// GraderOptions configure the grader (spec §8, GRADER_* variables).
type GraderOptions struct {
	Config   grader.Config
	Disabled bool
	// CacheTTL is how long a domain check is reused.
	CacheTTL time.Duration
}

// Submission is an email handed in for a full analysis (GraderSubmit);
// callers name it here, so they need not import the grader.
type Submission = grader.Submission

// InvalidInput is the grader's 400 (not VALIDATION_ERROR).
func InvalidInput(field, reason string) error {
	return &Error{Code: CodeInvalidInput, Message: field + ": " + reason,
		Details: map[string]any{"field": field, "reason": reason}}
}

// ErrGraderDisabled is the answer of every grader route when the
// deployment turned the grader off.
var ErrGraderDisabled = &Error{Code: CodeGraderDisabled,
	Message: "the grader is disabled in this deployment"}

// graderCache keeps recent domain checks; concurrent checks of one domain
// share one set of lookups.
type graderCache struct {
	mu      sync.Mutex
	entries map[string]cachedCheck
	flight  singleflight.Group
}

type cachedCheck struct {
	result  grader.Result
	expires time.Time
}

func checkKey(domain string, selectors []string) string {
	s := slices.Clone(selectors)
	slices.Sort(s)
	return strings.ToLower(domain) + "|" + strings.Join(s, ",")
}

// GraderDisabled reports whether the deployment turned the grader off.
func (a *App) GraderDisabled() bool { return a.opts.Grader.Disabled }

// GraderCheck grades a domain from DNS alone, from the cache when a check
// of the same domain and selectors is younger than the cache TTL.
func (a *App) GraderCheck(ctx context.Context, domain string, selectors []string) (grader.Result, error) {
	if a.opts.Grader.Disabled {
		return grader.Result{}, ErrGraderDisabled
	}
	if strings.TrimSpace(domain) == "" {
		return grader.Result{}, InvalidInput("domain", "is required")
	}
	cfg := a.graderConfig(domain)
	key := checkKey(domain, selectors) + "|" + strings.Join(cfg.ExtraSelectors, ",")
	now := a.Now()
	c := &a.graderCache
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && now.Before(e.expires) {
		c.mu.Unlock()
		return e.result, nil
	}
	c.mu.Unlock()
	v, err, _ := c.flight.Do(key, func() (any, error) {
		// The lookups outlive one caller's cancelled request.
		ctx := context.WithoutCancel(ctx)
		r, err := grader.Check(ctx, cfg, domain, selectors)
		if err != nil {
			return r, err
		}
		c.mu.Lock()
		if c.entries == nil || len(c.entries) > 10000 {
			c.entries = map[string]cachedCheck{}
		}
		c.entries[key] = cachedCheck{result: r, expires: a.Now().Add(a.opts.Grader.CacheTTL)}
		c.mu.Unlock()
		return r, nil
	})
	if err != nil {
		return grader.Result{}, graderInputError(err)
	}
	return v.(grader.Result), nil
}

// maxOwnSelectors caps the selectors of this server's own domains tried
// for one name: any account may add any name, so many accounts adding one
// name must not turn a check into many lookups.
const maxOwnSelectors = 8

// graderConfig is the grader's configuration for checking domain: the
// DKIM selectors of every sending domain this server holds under that
// name (any account; the signing keys first) are tried as well as the
// requested or default ones, so a domain set up here is graded with its
// own key. Selectors are public in DNS, so nothing is disclosed. A name
// the grader refuses, or a failed read, adds none.
func (a *App) graderConfig(domain string) grader.Config {
	cfg := a.opts.Grader.Config
	name, err := grader.NormalizeDomain(domain)
	if err != nil {
		return cfg
	}
	var own []string
	if err := a.db.View(func(tx *storage.Tx) error {
		own, err = tx.DKIMSelectorsByName(name, maxOwnSelectors)
		return err
	}); err != nil || len(own) == 0 {
		return cfg
	}
	cfg.ExtraSelectors = append(slices.Clone(cfg.ExtraSelectors), own...)
	return cfg
}

// graderInputError is the API's answer to an error of the grader: its
// invalid input (a grader.InputError) is 400 INVALID_INPUT naming the
// field, anything else a 500.
func graderInputError(err error) error {
	var ie *grader.InputError
	if errors.As(err, &ie) {
		return InvalidInput(ie.Field, ie.Reason)
	}
	return Internal(err)
}

// StoredResult is a grader result with its identity.
type StoredResult struct {
	ID        string
	CreatedAt time.Time
	Result    json.RawMessage // the check-result fields
}

// GraderSubmit grades a full email and stores the result under the
// caller's account. A failed write is 500 PERSIST_FAILED.
func (a *App) GraderSubmit(ctx context.Context, p Principal, s grader.Submission) (StoredResult, error) {
	if a.opts.Grader.Disabled {
		return StoredResult{}, ErrGraderDisabled
	}
	if err := a.authorize(p, ScopeGraderWrite); err != nil {
		return StoredResult{}, err
	}
	cfg := a.opts.Grader.Config
	if d, err := grader.SubmissionDomain(s); err == nil {
		cfg = a.graderConfig(d)
	}
	r, err := grader.Submit(ctx, cfg, s)
	if err != nil {
		return StoredResult{}, graderInputError(err)
	}
	body, err := json.Marshal(r)
	if err != nil {
		return StoredResult{}, Internal(err)
	}
	rec := storage.GraderResult{ID: NewID(), AccountID: p.Account.ID, CreatedAt: a.Now(), Domain: r.Domain,
		Score: r.Score, Grade: r.Grade, Result: body}
	stored := StoredResult{ID: rec.ID, CreatedAt: rec.CreatedAt, Result: body}
	if err := update(a, p, noAudit, &stored, func(tx *storage.Tx) error { return tx.InsertGraderResult(rec) }); err != nil {
		return StoredResult{}, &Error{Code: CodePersistFailed,
			Message: "the result could not be stored", Details: map[string]any{"cause": err.Error()}}
	}
	return stored, nil
}

func dbError(err error) error {
	return &Error{Code: CodeDBError, Message: "the result could not be read",
		Details: map[string]any{"cause": err.Error()}}
}

// GraderResult reads one of the caller's results; another account's is
// 404 NOT_FOUND.
func (a *App) GraderResult(p Principal, id string) (storage.GraderResult, error) {
	if a.opts.Grader.Disabled {
		return storage.GraderResult{}, ErrGraderDisabled
	}
	if err := a.authorize(p, ScopeGraderRead); err != nil {
		return storage.GraderResult{}, err
	}
	var r storage.GraderResult
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		r, err = tx.GraderResult(p.Account.ID, id)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return r, NotFound("grader result")
	}
	if err != nil {
		return r, dbError(err)
	}
	return r, nil
}

// GraderHistory lists the caller's results, newest first; perPage is
// clamped to 1..100.
func (a *App) GraderHistory(p Principal, page, perPage int) (list []storage.GraderResult, total int, e error) {
	if a.opts.Grader.Disabled {
		return nil, 0, ErrGraderDisabled
	}
	if err := a.authorize(p, ScopeGraderRead); err != nil {
		return nil, 0, err
	}
	perPage = min(max(perPage, 1), 100)
	page = max(page, 1)
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, _, total, err = tx.GraderResults(p.Account.ID, storage.ListOptions{Offset: (page - 1) * perPage, Limit: perPage, Reverse: true})
		return err
	})
	if err != nil {
		return nil, 0, dbError(err)
	}
	return list, total, nil
}

package app

import (
	"strings"
	"time"
	"unicode/utf8"

	"mailbolt/storage"
)

// DefaultSearchBudget is how many messages a search reads for one page at
// most, unless told otherwise.
const DefaultSearchBudget = 5000

// MaxSubjectPrefix is the longest subject prefix a search takes, in
// characters.
const MaxSubjectPrefix = 200

// MessageSearch is a message list's filters (MessageQuery) and a subject
// prefix, checked against each message while walking the account's
// messages newest first within the time window.
type MessageSearch struct {
	MessageQuery
	// SubjectPrefix matches subjects that start with it, ignoring case
	// (both are lower cased).
	SubjectPrefix string
	// Budget is how many messages one page reads at most; 0 means
	// DefaultSearchBudget.
	Budget int
}

// SearchResult is where a search page ended: the cursor of the next page
// (HasMore, Next), and, when the budget ran out before the page was full
// (Spent), the creation time down to which the account's messages were
// searched (Reached): the next page continues from there.
type SearchResult struct {
	storage.ListResult
	Examined int
	Spent    bool
	Reached  time.Time
}

// SearchMessages lists the caller's messages of its key's mode, newest
// first, that match q. A filter by recipient, campaign, tag, status or
// stream walks that index of the store; subject or a time range alone
// walks the account's messages newest first. Either way each page reads at most
// q.Budget messages: a page's cost is bounded by the page or the budget,
// and a search over many messages answers a continuation cursor instead
// of walking them all.
func (a *App) SearchMessages(p Principal, q MessageSearch, opts storage.ListOptions) ([]storage.Message, SearchResult, error) {
	if err := a.authorize(p, ScopeMessagesRead); err != nil {
		return nil, SearchResult{}, err
	}
	prefix := strings.ToLower(strings.TrimSpace(q.SubjectPrefix))
	if utf8.RuneCountInString(prefix) > MaxSubjectPrefix {
		return nil, SearchResult{}, Validation("subject", "must be at most 200 characters")
	}
	budget := q.Budget
	if budget <= 0 {
		budget = DefaultSearchBudget
	}
	f := storage.MessageFilter{Test: p.Test, Status: q.Status, CampaignID: q.CampaignID, Tag: q.Tag,
		Recipient: q.Recipient, Stream: q.Stream, Range: idRange(q.Since, q.Until), SubjectPrefix: prefix}
	opts.Reverse = true
	if opts.Limit <= 0 {
		opts.Limit = 50 // a page, never the whole history
	}
	var list []storage.Message
	var sc storage.MessageScan
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, sc, err = tx.ScanMessages(p.Account.ID, f, opts, budget)
		return err
	})
	if err != nil {
		return nil, SearchResult{}, storageErr(err, "message")
	}
	return list, SearchResult{ListResult: sc.ListResult, Examined: sc.Examined, Spent: sc.Spent, Reached: sc.Reached}, nil
}

// QueueBudget is how many entries of the deployment's message queue the
// Overview reads to count one account's.
const QueueBudget = 100000

// QueueSummary is an account's part of the message queue.
type QueueSummary struct {
	Due, Later int // due now (or in flight), due later (scheduled, deferred)
	Complete   bool
	// Oldest is the account's earliest queue entry, when there is one:
	// the message, its status and when it is (or was) due.
	Oldest *QueuedMessage
}

// QueuedMessage is one queue entry of the caller's account.
type QueuedMessage struct {
	ID     string
	Status string
	DueAt  time.Time
}

// QueueSummary counts the caller's messages in the queue and finds its
// oldest due one. The queue is one deployment-wide list by due time, and
// the gauges count it for the deployment, not per account, so this walks
// at most QueueBudget entries of it (reading keys, not messages); the
// counts are lower bounds when Complete is false. Other accounts' entries
// are skipped, never shown.
func (a *App) QueueSummary(p Principal) (QueueSummary, error) {
	if err := a.authorize(p, ScopeMessagesRead); err != nil {
		return QueueSummary{}, err
	}
	var s QueueSummary
	err := a.db.View(func(tx *storage.Tx) error {
		q := tx.AccountQueue(p.Account.ID, a.Now(), QueueBudget)
		s = QueueSummary{Due: q.Due, Later: q.Later, Complete: q.Complete}
		if q.HasOldest {
			s.Oldest = &QueuedMessage{ID: q.Oldest.MessageID, DueAt: q.Oldest.At}
			if m, err := tx.Message(p.Account.ID, q.Oldest.MessageID); err == nil {
				s.Oldest.Status = m.Status
			}
		}
		return nil
	})
	return s, storageErr(err, "message")
}

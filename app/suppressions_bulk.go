package app

import (
	"fmt"
	"strconv"

	"mailbolt/storage"
)

// MaxSuppressionImport is the most rows one import takes (POST
// /v1/suppressions/import, `mailbolt suppressions import`). A larger list
// is refused whole, like an oversized batch send: split it.
const MaxSuppressionImport = 10000

// exportChunk is how many suppressions an export reads per read
// transaction: each chunk is handed on after its transaction has ended,
// so a slow reader never holds one open.
const exportChunk = 500

// SuppressionInput is one suppression to add: the fields of POST
// /v1/suppressions.
type SuppressionInput struct {
	Recipient string `json:"recipient"`
	Reason    string `json:"reason,omitempty"` // empty: manual
	Stream    string `json:"stream,omitempty"` // empty: every stream
	Line      int    `json:"line,omitempty"`   // the row's line in a CSV file; 0 for a JSON array
}

// ImportResult is what an import did: rows it added, and rows whose
// recipient already had an entry for the same stream (in the list, or
// earlier in the same import), which are left as they were.
type ImportResult struct {
	Added          int `json:"added"`
	AlreadyPresent int `json:"already_present"`
}

// rowError places a row's validation error: by its CSV line when it has
// one (details.line, the message starting "line N:"), else by its index in
// the JSON array (details.index, the field suppressions[i].…) as a batch
// send does.
func rowError(err error, i int, in SuppressionInput) error {
	e := AsError(err)
	if in.Line > 0 {
		e.Message = fmt.Sprintf("line %d: %s", in.Line, e.Message)
		return e.With("line", in.Line)
	}
	return e.Within(fmt.Sprintf("suppressions[%d].", i)).With("index", i)
}

// ImportSuppressions adds many suppressions at once, all or nothing: every
// row is validated first (the same rules as AddSuppression), and a bad one
// refuses the whole import naming its line or index; otherwise they are
// written in one transaction. A row already present is counted, not an
// error.
func (a *App) ImportSuppressions(p Principal, rows []SuppressionInput) (ImportResult, error) {
	var res ImportResult
	if err := a.authorize(p, ScopeSuppressionsWrite); err != nil {
		return res, err
	}
	if len(rows) > MaxSuppressionImport {
		return res, NewError(CodeValidation,
			fmt.Sprintf("an import holds at most %d suppressions (got %d): split it", MaxSuppressionImport, len(rows))).
			With("field", "suppressions").With("limit", MaxSuppressionImport)
	}
	now := a.Now()
	list := make([]storage.Suppression, len(rows))
	for i, in := range rows {
		s, err := suppressionRecord(p.Account.ID, in, now)
		if err != nil {
			return res, rowError(err, i, in)
		}
		list[i] = s
	}
	err := update(a, p, action{"suppression.import", strconv.Itoa(len(rows)) + " rows"}, &res, func(tx *storage.Tx) error {
		added, err := tx.PutSuppressions(list)
		res = ImportResult{Added: added, AlreadyPresent: len(list) - added}
		return err
	})
	if err != nil {
		return ImportResult{}, storageErr(err, "suppression")
	}
	return res, nil
}

// ExportSuppressions hands each the account's suppressions in recipient
// order (with a stream, only the entries that name that stream), a chunk
// at a time. Each chunk is read in its own short transaction that has
// ended before each runs, so the cost is proportional to the list and the
// memory to a chunk; an entry added or removed during the export may or
// may not be in it. Validation and authorization fail before each is
// first called, so a caller can still answer with an error then; once
// they pass, each is called at least once (with an empty chunk for an
// empty list), so a caller that writes a header on the first call always
// writes one.
func (a *App) ExportSuppressions(p Principal, stream string, each func([]storage.Suppression) error) error {
	if err := a.authorize(p, ScopeSuppressionsRead); err != nil {
		return err
	}
	if e := CheckStream("stream", stream); e != nil {
		return e
	}
	accountID := p.Account.ID
	opts := storage.ListOptions{Limit: exportChunk}
	for {
		var page []storage.Suppression
		var res storage.ListResult
		err := a.db.View(func(tx *storage.Tx) error {
			var err error
			page, res, err = tx.Suppressions(accountID, opts)
			return err
		})
		if err != nil {
			return storageErr(err, "suppression")
		}
		if stream != "" {
			kept := page[:0]
			for _, s := range page {
				if s.Stream == stream {
					kept = append(kept, s)
				}
			}
			page = kept
		}
		if err := each(page); err != nil {
			return err
		}
		if !res.HasMore {
			return nil
		}
		opts.After = res.Next
	}
}

package app

import (
	"mailbolt/storage"
)

// action names one change for the audit log: what was done (a dotted
// name: resource.verb) and to what (an id, an address).
type action struct {
	name   string
	target string
}

// noAudit is the action of writes that are not changes to an account's
// setup: mail sent, results graded. Their own records are their history.
var noAudit = action{}

// audit appends p's entry for act in tx: the change's own transaction, so a
// failed change leaves no entry and a committed one always has its entry.
// Principals without an Actor (the server's own work) and principals of no
// account write none.
func (a *App) audit(tx *storage.Tx, p Principal, act action) error {
	if act.name == "" || p.Actor == "" || p.Account.ID == "" {
		return nil
	}
	now := a.Now().UTC()
	return tx.AppendAudit(storage.AuditEntry{ID: NewID(), AccountID: p.Account.ID, Actor: p.Actor,
		ActorKind: string(p.Kind), Action: act.name, Target: act.target, Source: p.Source, At: now},
		now.Add(a.opts.EventRetention))
}

// AuditLog lists the account's audit log, newest first (GET
// /v1/audit-log, scope account:read). Entries are kept as long as events.
func (a *App) AuditLog(p Principal, opts storage.ListOptions) (list []storage.AuditEntry, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeAccountRead); err != nil {
		return nil, res, 0, err
	}
	opts.Reverse = true
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, res, err = tx.AuditLog(p.Account.ID, opts)
		total = tx.AuditCount(p.Account.ID)
		return err
	})
	return list, res, total, storageErr(err, "audit entry")
}

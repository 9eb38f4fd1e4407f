package app

import (
	"context"

	"mailbolt/storage"
)

// CheckDueDomains re-verifies every domain whose scheduled check is due.
// Each domain is first claimed by moving its next check a full interval
// ahead (in storage, so several servers sharing a database would not check
// it twice); the DNS lookups then run outside any transaction. It returns
// how many domains it checked.
func (a *App) CheckDueDomains(ctx context.Context) (int, error) {
	checked := 0
	for ctx.Err() == nil {
		var claimed []storage.Domain
		now := a.Now()
		err := a.db.Update(func(tx *storage.Tx) error {
			claimed = claimed[:0]
			for _, id := range tx.DueDomainChecks(now, 20) {
				d, err := tx.DomainByID(id)
				if err != nil {
					continue
				}
				next := now.Add(a.opts.Domains.RecheckInterval)
				d.NextCheckAt = &next
				if err := tx.UpdateDomain(d); err != nil {
					return err
				}
				claimed = append(claimed, d)
			}
			return nil
		})
		if err != nil || len(claimed) == 0 {
			return checked, err
		}
		for _, d := range claimed {
			if _, e := a.verify(ctx, Principal{}, d); e != nil {
				a.log.Warn("domain re-check failed", "domain", d.Name, "account", d.AccountID, "err", e)
				continue
			}
			checked++ // verify logs a change of status
		}
	}
	return checked, ctx.Err()
}

// JobDomainChecks is the job lease of the domain re-checks: one node
// looks for due domains at a time (each domain is claimed on its own as
// well, so a round that outlives the lease checks no domain twice).
const JobDomainChecks = "domain_checks"

func (a *App) runDomainChecks(ctx context.Context) {
	a.everyLeased(ctx, a.opts.DomainCheckTick, JobDomainChecks, "domain re-checks", func(ctx context.Context) error {
		_, err := a.CheckDueDomains(ctx)
		return err
	})
}

package app

import (
	"context"

	"mailbolt/storage"
)

// Sweep removes every record whose retention has ended, in transactions of
// at most SweepBatch records so writers are never held up for long. It
// returns how many expiry entries it handled.
func (a *App) Sweep() (int, error) {
	total := 0
	for {
		var n int
		err := a.db.Update(func(tx *storage.Tx) error {
			var err error
			n, err = tx.SweepExpired(a.Now(), a.opts.SweepBatch)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < a.opts.SweepBatch {
			return total, nil
		}
	}
}

// JobSweep is the job lease (storage.DB.LeaseJob) of the retention
// sweep: one node sweeps at a time.
const JobSweep = "sweep"

func (a *App) runSweeper(ctx context.Context) {
	a.everyLeased(ctx, a.opts.SweepInterval, JobSweep, "sweep", a.sweepRound)
}

func (a *App) sweepRound(context.Context) error {
	n, err := a.Sweep()
	if n > 0 {
		a.log.Info("swept expired records", "count", n)
	}
	return err
}

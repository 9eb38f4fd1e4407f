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

func (a *App) runSweeper(ctx context.Context) {
	a.every(ctx, a.opts.SweepInterval, "sweep", func(context.Context) error {
		n, err := a.Sweep()
		if n > 0 {
			a.log.Info("swept expired records", "count", n)
		}
		return err
	})
}

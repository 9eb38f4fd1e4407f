package app

import (
	"errors"

	"mailbolt/storage"
)

// FindSuppressions is every suppression of one recipient (exact address,
// any case, either spelling of an IDN domain): the all-streams entry
// first, then one per stream. None is an empty list, not an error.
func (a *App) FindSuppressions(p Principal, recipient string) ([]storage.Suppression, error) {
	if err := a.authorize(p, ScopeSuppressionsRead); err != nil {
		return nil, err
	}
	addr, err := lookupAddress("recipient", recipient)
	if err != nil {
		return nil, err
	}
	var out []storage.Suppression
	err = a.db.View(func(tx *storage.Tx) error {
		for _, stream := range append([]string{""}, storage.Streams...) {
			s, err := tx.Suppression(p.Account.ID, addr, stream)
			switch {
			case errors.Is(err, storage.ErrNotFound):
			case err != nil:
				return err
			default:
				out = append(out, s)
			}
		}
		return nil
	})
	return out, storageErr(err, "suppression")
}

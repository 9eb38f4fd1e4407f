package app

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/google/uuid"

	"mailbolt/storage"
)

// aliasPattern is what a template alias may look like: short, lowercase,
// safe in a URL path and a deploy script without quoting.
var aliasPattern = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// ValidateAlias checks a template alias. One that parses as a UUID is
// refused: it could be taken for a template id, and ids are resolved
// first, so the alias would never be reached.
func ValidateAlias(alias string) error {
	if !aliasPattern.MatchString(alias) {
		return Validation("alias", "must be 1 to 64 characters of a-z, 0-9, _ and -")
	}
	if _, err := uuid.Parse(alias); err == nil {
		return Validation("alias", "must not look like a UUID: it would read as a template id")
	}
	return nil
}

// resolveTemplate reads the account's template named by ref: its id, or
// else its alias. Ids are tried first; an alias never parses as one.
func resolveTemplate(tx *storage.Tx, accountID, ref string) (storage.Template, error) {
	t, err := tx.Template(accountID, ref)
	if !errors.Is(err, storage.ErrNotFound) || !aliasPattern.MatchString(ref) {
		return t, err
	}
	id, err := tx.TemplateIDByAlias(accountID, ref)
	if err != nil {
		return t, err
	}
	return tx.Template(accountID, id)
}

// templateErr maps a storage failure of a template write, naming a taken
// alias.
func templateErr(err error, alias string) error {
	if errors.Is(err, storage.ErrAliasTaken) {
		return Conflict(fmt.Sprintf("the alias %q is taken by another template of the account", alias))
	}
	return storageErr(err, "template")
}

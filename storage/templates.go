package storage

import (
	"errors"
	"time"
)

// Template is a message template of one account; its content lives in
// numbered versions, Version being the newest.
type Template struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	// Alias is the template's optional name for use in place of its id,
	// unique within the account (template_aliases); "" when it has none.
	Alias     string    `json:"alias,omitempty"`
	Version   int       `json:"version"`
	Strict    bool      `json:"strict"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// TemplateVersion is one immutable revision of a template's content.
type TemplateVersion struct {
	TemplateID string    `json:"template_id"`
	Version    int       `json:"version"`
	Name       string    `json:"name"`
	Subject    string    `json:"subject"`
	HTML       string    `json:"html"`
	Text       string    `json:"text"`
	Strict     bool      `json:"strict"`
	CreatedAt  time.Time `json:"created_at"`
}

const collectionTemplates = "templates"

// PutTemplate stores a template and a new version of its content. The first
// version creates the template. The alias index follows t.Alias: a
// changed alias frees the old one, and an alias another template of the
// account holds is ErrAliasTaken.
func (tx *Tx) PutTemplate(t Template, v TemplateVersion) error {
	b := tx.bucket(bucketTemplates)
	key := join(t.AccountID, t.ID)
	var old Template
	switch err := getJSON(b, key, &old); {
	case errors.Is(err, ErrNotFound):
		if err := tx.addCount(collectionTemplates, t.AccountID, 1); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if err := tx.moveTemplateAlias(t, old.Alias); err != nil {
		return err
	}
	if err := putJSON(b, key, t); err != nil {
		return err
	}
	vk := append(prefix(t.ID), putU64(uint64(v.Version))...)
	if tx.bucket(bucketTemplateVersions).Get(vk) != nil {
		return ErrExists
	}
	return putJSON(tx.bucket(bucketTemplateVersions), vk, v)
}

// Template reads an account's template.
func (tx *Tx) Template(accountID, id string) (Template, error) {
	var t Template
	err := getJSON(tx.bucket(bucketTemplates), join(accountID, id), &t)
	return t, err
}

// TemplateVersion reads one version of an account's template; another
// account's is ErrNotFound.
func (tx *Tx) TemplateVersion(accountID, templateID string, version int) (TemplateVersion, error) {
	var v TemplateVersion
	if !tx.ownsTemplate(accountID, templateID) {
		return v, ErrNotFound
	}
	err := getJSON(tx.bucket(bucketTemplateVersions), append(prefix(templateID), putU64(uint64(version))...), &v)
	return v, err
}

// ownsTemplate reports whether template id is accountID's: its versions
// are kept by template id alone.
func (tx *Tx) ownsTemplate(accountID, id string) bool {
	return tx.bucket(bucketTemplates).Get(join(accountID, id)) != nil
}

// Templates lists an account's templates, oldest first.
func (tx *Tx) Templates(accountID string, opts ListOptions) ([]Template, ListResult, error) {
	return scanJSON[Template](tx.bucket(bucketTemplates), prefix(accountID), opts)
}

// TemplateCount is the number of templates of an account.
func (tx *Tx) TemplateCount(accountID string) int { return tx.count(collectionTemplates, accountID) }

// TemplateVersions lists the versions of an account's template, newest
// first; another account's template is ErrNotFound.
func (tx *Tx) TemplateVersions(accountID, templateID string, opts ListOptions) ([]TemplateVersion, ListResult, error) {
	if !tx.ownsTemplate(accountID, templateID) {
		return nil, ListResult{}, ErrNotFound
	}
	opts.Reverse = true
	return scanJSON[TemplateVersion](tx.bucket(bucketTemplateVersions), prefix(templateID), opts)
}

// moveTemplateAlias points the account's alias index at t for t.Alias,
// removing the entry of the alias t had before (was).
func (tx *Tx) moveTemplateAlias(t Template, was string) error {
	if t.Alias == was {
		return nil
	}
	aliases := tx.bucket(bucketTemplateAliases)
	if t.Alias != "" {
		k := join(t.AccountID, t.Alias)
		if owner := aliases.Get(k); owner != nil && string(owner) != t.ID {
			return ErrAliasTaken
		}
		if err := aliases.Put(k, []byte(t.ID)); err != nil {
			return err
		}
	}
	if was != "" {
		return aliases.Delete(join(t.AccountID, was))
	}
	return nil
}

// TemplateIDByAlias is the id of the account's template with alias;
// ErrNotFound when no template of the account has it.
func (tx *Tx) TemplateIDByAlias(accountID, alias string) (string, error) {
	id := tx.bucket(bucketTemplateAliases).Get(join(accountID, alias))
	if id == nil {
		return "", ErrNotFound
	}
	return string(id), nil
}

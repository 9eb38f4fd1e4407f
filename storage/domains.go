package storage

import (
	"bytes"
	"slices"
	"sort"
	"time"
)

// Domain is a sending domain of one account with its DKIM keys and the
// outcome of its last DNS check.
type Domain struct {
	ID            string      `json:"id"`
	AccountID     string      `json:"account_id"`
	Name          string      `json:"name"` // lower case, punycode
	Status        string      `json:"status"`
	StatusReason  string      `json:"status_reason,omitempty"`
	DKIMKeys      []DomainKey `json:"dkim_keys"`
	Checks        []DNSCheck  `json:"checks,omitempty"`
	CreatedAt     time.Time   `json:"created_at"`
	VerifiedAt    *time.Time  `json:"verified_at,omitempty"`
	LastCheckedAt *time.Time  `json:"last_checked_at,omitempty"`
	CheckError    string      `json:"check_error,omitempty"`
	NextCheckAt   *time.Time  `json:"next_check_at,omitempty"`
}

// DomainKey is one DKIM key pair of a domain. The private key is stored
// here and nowhere else, sealed under the secret key (seal.go); it is
// never returned by the API.
type DomainKey struct {
	Selector    string     `json:"selector"`
	Algorithm   string     `json:"algorithm"`
	PrivateKey  []byte     `json:"private_key"`
	PublicKey   string     `json:"public_key"`
	CreatedAt   time.Time  `json:"created_at"`
	ActivatedAt *time.Time `json:"activated_at,omitempty"` // signing uses the key activated last
	RetiredAt   *time.Time `json:"retired_at,omitempty"`   // a newer key took over
}

// DNSCheck is what the last lookup of one record found.
type DNSCheck struct {
	Purpose string   `json:"purpose"`
	Name    string   `json:"name"`
	Status  string   `json:"status"`
	Found   []string `json:"found,omitempty"`
	Error   string   `json:"error,omitempty"`
}

const collectionDomains = "domains"

// InsertDomain stores a new domain; ErrExists when the account already has
// one of that name.
func (tx *Tx) InsertDomain(d Domain) error {
	names := tx.bucket(bucketDomainNames)
	nk := join(d.AccountID, d.Name)
	if names.Get(nk) != nil {
		return ErrExists
	}
	if err := names.Put(nk, []byte(d.ID)); err != nil {
		return err
	}
	if err := tx.bucket(bucketDomainsByAccount).Put(join(d.AccountID, d.ID), nil); err != nil {
		return err
	}
	if err := tx.putDomain(d, nil); err != nil {
		return err
	}
	return tx.addCount(collectionDomains, d.AccountID, 1)
}

// UpdateDomain replaces a stored domain of d.AccountID and moves its place
// in the re-check schedule; ErrNotFound when that account has no such
// domain. The name never changes.
func (tx *Tx) UpdateDomain(d Domain) error {
	old, err := tx.Domain(d.AccountID, d.ID)
	if err != nil {
		return err
	}
	d.Name = old.Name
	return tx.putDomain(d, old.NextCheckAt)
}

func (tx *Tx) putDomain(d Domain, oldNext *time.Time) error {
	sched := tx.bucket(bucketDomainSchedule)
	if oldNext != nil {
		if err := sched.Delete(scheduleKey(*oldNext, d.ID)); err != nil {
			return err
		}
	}
	if d.NextCheckAt != nil {
		if err := sched.Put(scheduleKey(*d.NextCheckAt, d.ID), nil); err != nil {
			return err
		}
	}
	if err := tx.bucket(bucketDomainStatus).Put(join(d.AccountID, d.Name), []byte(d.Status)); err != nil {
		return err
	}
	stored := d
	stored.DKIMKeys = append([]DomainKey(nil), d.DKIMKeys...)
	for i, k := range stored.DKIMKeys {
		if len(k.PrivateKey) == 0 {
			continue
		}
		sealed, err := tx.sealValue(dkimContext(d.ID, k.Selector), k.PrivateKey)
		if err != nil {
			return err
		}
		stored.DKIMKeys[i].PrivateKey = sealed
	}
	return putJSON(tx.bucket(bucketDomains), []byte(d.ID), stored)
}

// DomainStatus reads only the status of an account's domain: what the
// sending path checks on every message, without decoding the keys.
func (tx *Tx) DomainStatus(accountID, name string) (string, error) {
	v := tx.bucket(bucketDomainStatus).Get(join(accountID, name))
	if v == nil {
		return "", ErrNotFound
	}
	return string(v), nil
}

func scheduleKey(at time.Time, id string) []byte {
	return append(putU64(uint64(at.UnixNano())), id...)
}

// Domain reads one of an account's domains; another account's is
// ErrNotFound.
func (tx *Tx) Domain(accountID, id string) (Domain, error) {
	d, err := tx.DomainByID(id)
	if err == nil && d.AccountID != accountID {
		return Domain{}, ErrNotFound
	}
	return d, err
}

// DomainByID reads a domain of any account: for the re-check scheduler,
// which finds domains by their place in domain_schedule, never for a
// request made on behalf of a tenant.
func (tx *Tx) DomainByID(id string) (Domain, error) {
	key := []byte(id)
	raw := tx.bucket(bucketDomains).Get(key)
	if raw == nil {
		return Domain{}, ErrNotFound
	}
	if tx.decoded != nil {
		if d, ok := tx.decoded.domains.get(key, raw); ok {
			return d, nil
		}
	}
	var d Domain
	if err := decodeJSON(key, raw, &d); err != nil {
		return Domain{}, err
	}
	for i, k := range d.DKIMKeys {
		if len(k.PrivateKey) == 0 {
			continue
		}
		clear, err := tx.openValue(dkimContext(d.ID, k.Selector), k.PrivateKey)
		if err != nil {
			return Domain{}, err
		}
		d.DKIMKeys[i].PrivateKey = clear
	}
	if tx.decoded != nil {
		tx.decoded.domains.put(key, raw, d)
	}
	return d, nil
}

// DomainByName finds an account's domain by its normalised name.
func (tx *Tx) DomainByName(accountID, name string) (Domain, error) {
	id := tx.bucket(bucketDomainNames).Get(join(accountID, name))
	if id == nil {
		return Domain{}, ErrNotFound
	}
	return tx.DomainByID(string(id))
}

// Domains lists an account's domains, oldest first.
func (tx *Tx) Domains(accountID string, opts ListOptions) ([]Domain, ListResult, error) {
	var out []Domain
	res, err := scan(tx.bucket(bucketDomainsByAccount), prefix(accountID), opts, func(k, _ []byte) error {
		d, err := tx.DomainByID(string(k))
		if err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	return out, res, err
}

// DomainCount is the number of domains of an account.
func (tx *Tx) DomainCount(accountID string) int { return tx.count(collectionDomains, accountID) }

// DeleteDomain removes one of an account's domains, its keys and its
// indexes; another account's is ErrNotFound.
func (tx *Tx) DeleteDomain(accountID, id string) error {
	d, err := tx.Domain(accountID, id)
	if err != nil {
		return err
	}
	if d.NextCheckAt != nil {
		if err := tx.bucket(bucketDomainSchedule).Delete(scheduleKey(*d.NextCheckAt, id)); err != nil {
			return err
		}
	}
	for _, del := range []struct {
		bucket []byte
		key    []byte
	}{
		{bucketDomains, []byte(id)},
		{bucketDomainNames, join(d.AccountID, d.Name)},
		{bucketDomainStatus, join(d.AccountID, d.Name)},
		{bucketDomainsByAccount, join(d.AccountID, id)},
	} {
		if err := tx.bucket(del.bucket).Delete(del.key); err != nil {
			return err
		}
	}
	return tx.addCount(collectionDomains, d.AccountID, -1)
}

// DueDomainChecks returns the ids of at most max domains whose next
// scheduled check is at or before now, earliest first.
func (tx *Tx) DueDomainChecks(now time.Time, max int) []string {
	var ids []string
	limit := putU64(uint64(now.UnixNano()))
	c := tx.bucket(bucketDomainSchedule).Cursor()
	for k, _ := c.First(); k != nil && len(ids) < max; k, _ = c.Next() {
		if len(k) < 8 || string(k[:8]) > string(limit) {
			break
		}
		ids = append(ids, string(k[8:]))
	}
	return ids
}

// DKIMSelectorsByName lists the DKIM selectors of every account's domain
// with the given normalised name, the signing keys first, then the newest,
// at most limit of them (limit ≤ 0: all): the grader tries them so that a
// domain this server verified has its own key found. It scans the
// domain_names keys (one name per account, no name-first index), so its
// cost grows with the number of domains; the private keys are not opened.
func (tx *Tx) DKIMSelectorsByName(name string, limit int) ([]string, error) {
	type cand struct {
		sel    string
		active bool
		at     time.Time
	}
	var cands []cand
	suffix := append([]byte{sep}, name...)
	err := tx.bucket(bucketDomainNames).ForEach(func(k, id []byte) error {
		if !bytes.HasSuffix(k, suffix) || bytes.IndexByte(k, sep) != len(k)-len(suffix) {
			return nil
		}
		var d Domain
		if err := getJSON(tx.bucket(bucketDomains), id, &d); err != nil {
			return err
		}
		for _, key := range d.DKIMKeys {
			cands = append(cands, cand{key.Selector, key.ActivatedAt != nil && key.RetiredAt == nil, key.CreatedAt})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].active != cands[j].active {
			return cands[i].active
		}
		return cands[i].at.After(cands[j].at)
	})
	var out []string
	for _, c := range cands {
		if limit > 0 && len(out) >= limit {
			break
		}
		if !slices.Contains(out, c.sel) {
			out = append(out, c.sel)
		}
	}
	return out, nil
}

package storage

import (
	"encoding/binary"
	"errors"
	"time"
)

// STSPolicy is a recipient domain's MTA-STS policy as last fetched
// (RFC 8461 §5.1: cached for its max_age, refreshed before it ends).
type STSPolicy struct {
	Domain    string    `json:"domain"`
	ID        string    `json:"id"`     // the TXT record's id the policy was fetched under
	Policy    string    `json:"policy"` // the policy file, as tlspolicy.Policy.String writes it
	FetchedAt time.Time `json:"fetched_at"`
	Expires   time.Time `json:"expires"` // FetchedAt + max_age
}

// STSPolicy reads the cached policy of a domain (lower case, A-labels).
func (tx *Tx) STSPolicy(domain string) (STSPolicy, error) {
	var p STSPolicy
	err := getJSON(tx.bucket(bucketSTSPolicies), []byte(domain), &p)
	return p, err
}

// PutSTSPolicy caches a domain's policy, replacing the one before.
func (tx *Tx) PutSTSPolicy(p STSPolicy) error {
	return putJSON(tx.bucket(bucketSTSPolicies), []byte(p.Domain), p)
}

// DeleteSTSPolicy drops a domain's cached policy (expired, or withdrawn
// with mode none).
func (tx *Tx) DeleteSTSPolicy(domain string) error {
	return tx.bucket(bucketSTSPolicies).Delete([]byte(domain))
}

// STSPolicies lists every cached policy, by domain.
func (tx *Tx) STSPolicies() ([]STSPolicy, error) {
	var out []STSPolicy
	err := tx.bucket(bucketSTSPolicies).ForEach(func(k, v []byte) error {
		var p STSPolicy
		if err := decodeJSON(k, v, &p); err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// TLSCount is one day's TLS session counts for one recipient domain and
// policy (RFC 8460 §4: the report's summary), with the failures by type.
type TLSCount struct {
	Day      uint32 // days since 1970-01-01 UTC
	Domain   string
	Policy   string // "sts", "tlsa" or "no-policy-found" (RFC 8460 §4.3)
	Success  uint64
	Failures map[string]uint64 // result type (RFC 8460 §4.3: "certificate-host-mismatch" …) → sessions
}

// tlsCountKey is <u32 day>·<domain>·<policy>.
func tlsCountKey(day uint32, domain, policy string) []byte {
	k := binary.BigEndian.AppendUint32(nil, day)
	return append(k, join("", domain, policy)...)
}

// AddTLSCount adds sessions to a day's counts for a domain and policy:
// one success, or one failure of the given result type.
func (tx *Tx) AddTLSCount(day uint32, domain, policy, failure string, n uint64) error {
	b := tx.bucket(bucketTLSCounts)
	key := tlsCountKey(day, domain, policy)
	c := TLSCount{Day: day, Domain: domain, Policy: policy}
	if err := getJSON(b, key, &c); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if failure == "" {
		c.Success += n
	} else {
		if c.Failures == nil {
			c.Failures = map[string]uint64{}
		}
		c.Failures[failure] += n
	}
	return putJSON(b, key, c)
}

// TLSCounts lists the counts of the days before day (oldest first), for
// reports to be sent.
func (tx *Tx) TLSCounts(before uint32) ([]TLSCount, error) {
	var out []TLSCount
	c := tx.bucket(bucketTLSCounts).Cursor()
	for k, v := c.First(); k != nil && len(k) >= 4 && binary.BigEndian.Uint32(k) < before; k, v = c.Next() {
		var tc TLSCount
		if err := decodeJSON(k, v, &tc); err != nil {
			return nil, err
		}
		out = append(out, tc)
	}
	return out, nil
}

// DeleteTLSCounts drops the counts of the days before day, once reported.
func (tx *Tx) DeleteTLSCounts(before uint32) error {
	c := tx.bucket(bucketTLSCounts).Cursor()
	for k, _ := c.First(); k != nil && len(k) >= 4 && binary.BigEndian.Uint32(k) < before; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

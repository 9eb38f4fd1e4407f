package storage

import (
	"bytes"
	"encoding/binary"
	"time"
)

// Inbound mail (schema v13): the domains an account receives mail for,
// the routes that send a received message to one of its webhooks, and the
// messages received, kept as they arrived for the event retention.

// InboundDomain is a domain an account receives mail for. Token is the
// per-account proof of ownership published at _mailbolt.<name>: every
// tenant's MX points at the same host, so the MX alone proves nothing.
type InboundDomain struct {
	ID            string     `json:"id"`
	AccountID     string     `json:"account_id"`
	Name          string     `json:"name"` // lower case, punycode
	Token         string     `json:"token"`
	Status        string     `json:"status"` // pending, verified, failed
	MXFound       []string   `json:"mx_found,omitempty"`
	TXTFound      bool       `json:"txt_found,omitempty"`
	CheckError    string     `json:"check_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	VerifiedAt    *time.Time `json:"verified_at,omitempty"`
	LastCheckedAt *time.Time `json:"last_checked_at,omitempty"`
	// FoundAt is when a check last completed its lookups (MXFound and
	// TXTFound are what it found): a check that failed (a timeout,
	// SERVFAIL) leaves them, and this, as they were. Nil for records
	// written before it was kept: their last check, when it succeeded.
	FoundAt *time.Time `json:"found_at,omitempty"`
}

// InboundRoute sends mail for Pattern (a local part, or "*") at one of an
// account's inbound domains to one of its webhooks.
type InboundRoute struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	DomainID  string `json:"domain_id"`
	Pattern   string `json:"pattern"` // lower case local part, or "*"
	WebhookID string `json:"webhook_id"`
	// Test is the mode of the route's webhook: a key sees and changes
	// only the routes of its own mode.
	Test      bool      `json:"test,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// InboundMessage is one received message, as delivered to one recipient.
// Its raw bytes are in inbound_raw under RawID, shared by every copy of the
// message the account received in one transaction (all of which expire
// at the same time).
type InboundMessage struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	RawID     string `json:"raw_id"`
	// Test is the mode of its email.received event (the route's webhook's).
	Test       bool      `json:"test,omitempty"`
	DomainID   string    `json:"domain_id"`
	RouteID    string    `json:"route_id"`
	EventID    string    `json:"event_id"`
	MailFrom   string    `json:"mail_from"`
	Recipient  string    `json:"recipient"`
	Size       int       `json:"size"`
	ReceivedAt time.Time `json:"received_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

const (
	collectionInboundDomains = "inbound_domains"
	collectionInboundRoutes  = "inbound_routes"
)

// InsertInboundDomain stores a new inbound domain; ErrExists when the
// account already has one of that name.
func (tx *Tx) InsertInboundDomain(d InboundDomain) error {
	names := tx.bucket(bucketInboundDomainNames)
	nk := join(d.AccountID, d.Name)
	if names.Get(nk) != nil {
		return ErrExists
	}
	if err := names.Put(nk, []byte(d.ID)); err != nil {
		return err
	}
	if err := putJSON(tx.bucket(bucketInboundDomains), join(d.AccountID, d.ID), d); err != nil {
		return err
	}
	return tx.addCount(collectionInboundDomains, d.AccountID, 1)
}

// InboundDomain reads one of an account's inbound domains.
func (tx *Tx) InboundDomain(accountID, id string) (InboundDomain, error) {
	var d InboundDomain
	err := getJSON(tx.bucket(bucketInboundDomains), join(accountID, id), &d)
	return d, err
}

// InboundDomains lists an account's inbound domains (ids are UUIDv7:
// creation order), with their total.
func (tx *Tx) InboundDomains(accountID string, opts ListOptions) ([]InboundDomain, ListResult, int, error) {
	list, res, err := scanJSON[InboundDomain](tx.bucket(bucketInboundDomains), prefix(accountID), opts)
	return list, res, tx.count(collectionInboundDomains, accountID), err
}

// UpdateInboundDomain stores the outcome of a verification. A verified
// domain claims its name in inbound_verified, the index the listener reads:
// ErrExists when another account's domain holds the name. A domain that is
// not verified gives up its claim.
func (tx *Tx) UpdateInboundDomain(d InboundDomain) error {
	b := tx.bucket(bucketInboundDomains)
	key := join(d.AccountID, d.ID)
	if b.Get(key) == nil {
		return ErrNotFound
	}
	claims := tx.bucket(bucketInboundVerified)
	held := claims.Get([]byte(d.Name))
	ours := held != nil && bytes.Equal(held, key)
	switch {
	case d.Status == InboundVerified && held != nil && !ours:
		return ErrExists
	case d.Status == InboundVerified && !ours:
		if err := claims.Put([]byte(d.Name), key); err != nil {
			return err
		}
	case d.Status != InboundVerified && ours:
		if err := claims.Delete([]byte(d.Name)); err != nil {
			return err
		}
	}
	return putJSON(b, key, d)
}

// Inbound domain statuses.
const (
	InboundPending  = "pending"
	InboundVerified = "verified"
	InboundFailed   = "failed"
)

// DeleteInboundDomain removes an inbound domain, its claim on its name and
// its routes.
func (tx *Tx) DeleteInboundDomain(accountID, id string) error {
	d, err := tx.InboundDomain(accountID, id)
	if err != nil {
		return err
	}
	key := join(accountID, id)
	if held := tx.bucket(bucketInboundVerified).Get([]byte(d.Name)); held != nil && bytes.Equal(held, key) {
		if err := tx.bucket(bucketInboundVerified).Delete([]byte(d.Name)); err != nil {
			return err
		}
	}
	byDomain := tx.bucket(bucketInboundRoutesByDomain)
	var routes [][]byte
	c := byDomain.Cursor()
	pfx := prefix(id)
	for k, v := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, v = c.Next() {
		routes = append(routes, append([]byte(nil), v...))
	}
	for _, rid := range routes {
		if err := tx.DeleteInboundRoute(accountID, string(rid)); err != nil && err != ErrNotFound {
			return err
		}
	}
	if err := tx.bucket(bucketInboundDomainNames).Delete(join(accountID, d.Name)); err != nil {
		return err
	}
	if err := tx.bucket(bucketInboundDomains).Delete(key); err != nil {
		return err
	}
	return tx.addCount(collectionInboundDomains, accountID, -1)
}

// VerifiedInboundDomain finds the verified inbound domain of a name, in
// whichever account holds it (the listener's lookup; ErrNotFound when no
// account has verified the name).
func (tx *Tx) VerifiedInboundDomain(name string) (InboundDomain, error) {
	key := tx.bucket(bucketInboundVerified).Get([]byte(name))
	if key == nil {
		return InboundDomain{}, ErrNotFound
	}
	var d InboundDomain
	err := getJSON(tx.bucket(bucketInboundDomains), key, &d)
	return d, err
}

// InsertInboundRoute stores a route; ErrExists when its domain already has
// a route with that pattern.
func (tx *Tx) InsertInboundRoute(r InboundRoute) error {
	idx := tx.bucket(bucketInboundRoutesByDomain)
	ik := join(r.DomainID, r.Pattern)
	if idx.Get(ik) != nil {
		return ErrExists
	}
	if err := idx.Put(ik, []byte(r.ID)); err != nil {
		return err
	}
	if err := putJSON(tx.bucket(bucketInboundRoutes), join(r.AccountID, r.ID), r); err != nil {
		return err
	}
	return tx.addCount(collectionInboundRoutes, r.AccountID, 1)
}

// InboundRoute reads one of an account's routes.
func (tx *Tx) InboundRoute(accountID, id string) (InboundRoute, error) {
	var r InboundRoute
	err := getJSON(tx.bucket(bucketInboundRoutes), join(accountID, id), &r)
	return r, err
}

// InboundRoutes lists an account's routes, with their total.
func (tx *Tx) InboundRoutes(accountID string, opts ListOptions) ([]InboundRoute, ListResult, int, error) {
	list, res, err := scanJSON[InboundRoute](tx.bucket(bucketInboundRoutes), prefix(accountID), opts)
	return list, res, tx.count(collectionInboundRoutes, accountID), err
}

// InboundRoutesOfMode lists an account's routes of one mode (test or
// live), with their total. An account has at most a thousand routes, so
// the total is counted by walking them.
func (tx *Tx) InboundRoutesOfMode(accountID string, test bool, opts ListOptions) ([]InboundRoute, ListResult, int, error) {
	b := tx.bucket(bucketInboundRoutes)
	match := func(k, v []byte) (InboundRoute, bool, error) {
		var r InboundRoute
		if err := decodeJSON(k, v, &r); err != nil {
			return r, false, err
		}
		return r, r.Test == test, nil
	}
	list, res, err := scanMatching(b, prefix(accountID), Range{}, opts, match)
	if err != nil {
		return nil, res, 0, err
	}
	all, _, err := scanMatching(b, prefix(accountID), Range{}, ListOptions{Limit: -1}, match)
	return list, res, len(all), err
}

// InboundDomainRoutes lists the routes of one of an account's domains.
func (tx *Tx) InboundDomainRoutes(accountID, domainID string) ([]InboundRoute, error) {
	var out []InboundRoute
	c := tx.bucket(bucketInboundRoutesByDomain).Cursor()
	pfx := prefix(domainID)
	for k, v := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, v = c.Next() {
		r, err := tx.InboundRoute(accountID, string(v))
		if err == ErrNotFound {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// InboundRouteFor finds the route of domain d for pattern, exactly (the
// caller tries the local part, then "*").
func (tx *Tx) InboundRouteFor(d InboundDomain, pattern string) (InboundRoute, error) {
	id := tx.bucket(bucketInboundRoutesByDomain).Get(join(d.ID, pattern))
	if id == nil {
		return InboundRoute{}, ErrNotFound
	}
	return tx.InboundRoute(d.AccountID, string(id))
}

// DeleteInboundRoute removes a route.
func (tx *Tx) DeleteInboundRoute(accountID, id string) error {
	r, err := tx.InboundRoute(accountID, id)
	if err != nil {
		return err
	}
	if err := tx.bucket(bucketInboundRoutesByDomain).Delete(join(r.DomainID, r.Pattern)); err != nil {
		return err
	}
	if err := tx.bucket(bucketInboundRoutes).Delete(join(accountID, id)); err != nil {
		return err
	}
	return tx.addCount(collectionInboundRoutes, accountID, -1)
}

// InsertInboundRaw stores the raw bytes of a received message once, under
// id, for every copy of it the account received (InsertInboundMessage with
// RawID id), kept until expires: the copies' common expiry.
func (tx *Tx) InsertInboundRaw(accountID, id string, raw []byte, expires time.Time) error {
	key := join(accountID, id)
	if err := tx.bucket(bucketInboundRaw).Put(key, raw); err != nil {
		return err
	}
	return tx.addExpiry(expires, kindInboundRaw, key)
}

// InsertInboundMessage stores one copy of a received message, kept until
// m.ExpiresAt (the event retention: it expires with its event). Its raw
// bytes are stored by InsertInboundRaw.
func (tx *Tx) InsertInboundMessage(m InboundMessage) error {
	key := join(m.AccountID, m.ID)
	if err := putJSON(tx.bucket(bucketInboundMessages), key, m); err != nil {
		return err
	}
	return tx.addExpiry(m.ExpiresAt, kindInboundMessage, key)
}

// InboundMessage reads one of an account's received messages.
func (tx *Tx) InboundMessage(accountID, id string) (InboundMessage, error) {
	var m InboundMessage
	err := getJSON(tx.bucket(bucketInboundMessages), join(accountID, id), &m)
	return m, err
}

// InboundRaw reads the raw bytes of received message m.
func (tx *Tx) InboundRaw(m InboundMessage) ([]byte, error) {
	raw := tx.bucket(bucketInboundRaw).Get(join(m.AccountID, m.RawID))
	if raw == nil || m.RawID == "" {
		return nil, ErrNotFound
	}
	return append([]byte(nil), raw...), nil
}

func expireInboundMessage(tx *Tx, key []byte, now time.Time) error {
	b := tx.bucket(bucketInboundMessages)
	var m InboundMessage
	if err := getJSON(b, key, &m); err != nil {
		return nil
	}
	if m.ExpiresAt.After(now) {
		return nil
	}
	return b.Delete(key)
}

// expireInboundRaw removes shared raw bytes: they are written once, with
// the expiry of all their copies.
func expireInboundRaw(tx *Tx, key []byte, _ time.Time) error {
	return tx.bucket(bucketInboundRaw).Delete(key)
}

// InboundUsage is what an account has received on day (days since
// 1970-01-01 UTC), the daily inbound quota's counters: the messages (one
// per routed recipient) and the raw bytes stored (once per message).
type InboundUsage struct {
	Messages int
	Bytes    int64
}

// InboundReceived is account's usage on day; zero on any other day.
func (tx *Tx) InboundReceived(accountID string, day uint32) InboundUsage {
	v := tx.bucket(bucketInboundCounts).Get([]byte(accountID))
	if len(v) < 12 || binary.BigEndian.Uint32(v[:4]) != day {
		return InboundUsage{}
	}
	u := InboundUsage{Messages: int(binary.BigEndian.Uint64(v[4:12]))}
	if len(v) >= 20 {
		u.Bytes = int64(binary.BigEndian.Uint64(v[12:20]))
	}
	return u
}

// AddInboundReceived counts add on top of account's usage on day; only
// the newest day is kept.
func (tx *Tx) AddInboundReceived(accountID string, day uint32, add InboundUsage) error {
	u := tx.InboundReceived(accountID, day)
	v := make([]byte, 20)
	binary.BigEndian.PutUint32(v[:4], day)
	binary.BigEndian.PutUint64(v[4:12], uint64(u.Messages+add.Messages))
	binary.BigEndian.PutUint64(v[12:20], uint64(u.Bytes+add.Bytes))
	return tx.bucket(bucketInboundCounts).Put([]byte(accountID), v)
}

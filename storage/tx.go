package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Tx is one unit of work: a read-only transaction inside DB.View or a
// read-write one inside DB.Update, used by one goroutine. Values it returns
// are copies, safe to keep after the transaction ends.
type Tx struct {
	btx     kvTx
	changed Change         // what this write transaction filed for the workers
	gauge   gaugeDelta     // what it changed of the gauges (gauges.go)
	seal    *sealer        // seals and opens secrets (seal.go); nil only read-only without a key file
	decoded *decodedCaches // hot records already decoded (decoded.go); nil: none
	// opened keeps the first buckets a read-only transaction looks up:
	// bbolt opens a bucket anew on every lookup outside a write
	// transaction (a write transaction keeps them itself).
	opened  [8]openedBucket
	nOpened int
}

type openedBucket struct {
	name string
	b    kvBucket
}

// Bucket names. Every bucket is created by a migration.
var (
	bucketMeta             = []byte("meta")
	bucketAccounts         = []byte("accounts")
	bucketAPIKeys          = []byte("api_keys")
	bucketAPIKeyHashes     = []byte("api_key_hashes")
	bucketAPIKeysByAccount = []byte("api_keys_by_account")
	bucketSuppressions     = []byte("suppressions")
	bucketTeam             = []byte("team")
	bucketTeamEmails       = []byte("team_emails")
	bucketIdempotency      = []byte("idempotency")
	bucketExpiry           = []byte("expiry")
	bucketCounts           = []byte("counts")
	bucketDomains          = []byte("domains")
	bucketDomainsByAccount = []byte("domains_by_account")
	bucketDomainNames      = []byte("domain_names")
	bucketDomainSchedule   = []byte("domain_schedule")
	bucketTemplates        = []byte("templates")
	bucketTemplateVersions = []byte("template_versions")

	bucketEvents              = []byte("events")
	bucketEventBodies         = []byte("event_bodies")
	bucketEventOutbox         = []byte("event_outbox")
	bucketWebhooks            = []byte("webhooks")
	bucketWebhookIDs          = []byte("webhook_ids")
	bucketDeliveries          = []byte("deliveries")
	bucketDeliveriesByWebhook = []byte("deliveries_by_webhook")
	bucketDeliveriesByStatus  = []byte("deliveries_by_status")
	bucketDeliveryByEvent     = []byte("delivery_by_event")
	bucketDeliveryQueue       = []byte("delivery_queue")

	bucketMessages        = []byte("messages")
	bucketMessageContent  = []byte("message_content")
	bucketMessageQueue    = []byte("message_queue")
	bucketMessageLeases   = []byte("message_leases")
	bucketEventsByMessage = []byte("events_by_message")
	bucketIPs             = []byte("ips")
	bucketIPCounts        = []byte("ip_counts")

	bucketDomainStatus = []byte("domain_status")
	bucketMessageRaw   = []byte("message_raw")

	bucketMessageOwner = []byte("message_owner")
	bucketMessageLinks = []byte("message_links")
	bucketEngagement   = []byte("engagement")
	bucketStats        = []byte("stats")

	bucketGraderResults = []byte("grader_results")

	bucketAnnouncements = []byte("announcements")
	bucketNotices       = []byte("announcement_notices")

	bucketTemplateAliases = []byte("template_aliases")

	bucketInboundDomains        = []byte("inbound_domains")
	bucketInboundDomainNames    = []byte("inbound_domain_names")
	bucketInboundVerified       = []byte("inbound_verified")
	bucketInboundRoutes         = []byte("inbound_routes")
	bucketInboundRoutesByDomain = []byte("inbound_routes_by_domain")
	bucketInboundMessages       = []byte("inbound_messages")
	bucketInboundRaw            = []byte("inbound_raw")
	bucketInboundCounts         = []byte("inbound_counts")

	bucketPeople          = []byte("people")
	bucketPasswordLinks   = []byte("password_links")
	bucketSessions        = []byte("sessions")
	bucketSessionsByEmail = []byte("sessions_by_email")
	bucketTeamByEmail     = []byte("team_by_email")
	bucketAudit           = []byte("audit")
	bucketSTSPolicies     = []byte("mta_sts_policies")
	bucketTLSCounts       = []byte("tls_report_counts")
	bucketTLSRetries      = []byte("tls_report_retries")

	bucketMessagesByRecipient = []byte("messages_by_recipient")
	bucketMessagesByTag       = []byte("messages_by_tag")
	bucketMessagesByCampaign  = []byte("messages_by_campaign")
	bucketMessagesByStream    = []byte("messages_by_stream")
	bucketMessagesByStatus    = []byte("messages_by_status")
)

var (
	keySchemaVersion = []byte("schema_version")
	keyServerSecret  = []byte("server_secret")

	keyReturnPathMACSince = []byte("return_path_mac_since")
	keyAnnounceUpgrade    = []byte("announce_upgrade")
)

const sep = 0x00

func (tx *Tx) bucket(name []byte) kvBucket {
	for _, o := range tx.opened[:tx.nOpened] {
		if o.name == string(name) {
			return o.b
		}
	}
	b := tx.btx.Bucket(name)
	if b == nil {
		// Migrations create every bucket; a missing one is a programming error.
		panic(fmt.Sprintf("storage: bucket %q missing", name))
	}
	if tx.nOpened < len(tx.opened) && !tx.btx.Writable() {
		tx.opened[tx.nOpened] = openedBucket{name: string(name), b: b}
		tx.nOpened++
	}
	return b
}

// join builds a composite key: parts separated by 0x00.
func join(parts ...string) []byte {
	n := len(parts) - 1
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 0, n)
	for i, p := range parts {
		if i > 0 {
			k = append(k, sep)
		}
		k = append(k, p...)
	}
	return k
}

// prefix is the key prefix of all records that belong to owner.
func prefix(owner string) []byte { return append([]byte(owner), sep) }

func putU64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func getU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func putJSON(b kvBucket, key []byte, v any) error { return writeJSON(b.Put, key, v) }

// putNewJSON is putJSON of a key that holds nothing yet (kvBucket.PutNew).
func putNewJSON(b kvBucket, key []byte, v any) error { return writeJSON(b.PutNew, key, v) }

func writeJSON(put func(key, value []byte) error, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return put(key, data)
}

func getJSON(b kvBucket, key []byte, v any) error {
	data := b.Get(key)
	if data == nil {
		return ErrNotFound
	}
	return decodeJSON(key, data, v)
}

func decodeJSON(key, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %q: %w", key, err)
	}
	return nil
}

// ListOptions select one page of a list. After is the opaque cursor returned
// as ListResult.Next by the previous page (nil for the first page); Offset
// skips records before the page starts (page mode). Reverse walks newest
// first where keys are in time order.
type ListOptions struct {
	After   []byte
	Offset  int
	Limit   int
	Reverse bool
}

// ListResult describes where a page ended.
type ListResult struct {
	// Next is the cursor for the following page; nil when HasMore is false.
	Next    []byte
	HasMore bool
}

// scanJSON lists the JSON records stored under pfx in b, one page of them.
func scanJSON[T any](b kvBucket, pfx []byte, opts ListOptions) ([]T, ListResult, error) {
	var out []T
	res, err := scan(b, pfx, opts, func(k, v []byte) error {
		var x T
		if err := decodeJSON(k, v, &x); err != nil {
			return err
		}
		out = append(out, x)
		return nil
	})
	return out, res, err
}

// scan walks the keys of b that start with pfx, in the order opts asks for,
// calling fn with the key (without pfx) and value of each record on the
// page. Its cost is proportional to Offset+Limit, never to the number of
// records under pfx.
func scan(b kvBucket, pfx []byte, opts ListOptions, fn func(k, v []byte) error) (ListResult, error) {
	c := b.Cursor()
	var k, v []byte
	var step func() ([]byte, []byte)
	if !opts.Reverse {
		step = c.Next
		if opts.After != nil {
			start := append(append([]byte{}, pfx...), opts.After...)
			k, v = c.Seek(start)
			if k != nil && bytes.Equal(k, start) {
				k, v = c.Next()
			}
		} else {
			k, v = c.Seek(pfx)
		}
	} else {
		step = c.Prev
		var start []byte
		if opts.After != nil {
			start = append(append([]byte{}, pfx...), opts.After...)
		} else {
			start = append(append([]byte{}, pfx...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		}
		k, v = c.Seek(start)
		if k == nil {
			k, v = c.Last()
		}
		for k != nil && bytes.Compare(k, start) >= 0 {
			k, v = c.Prev()
		}
	}
	for skipped := 0; skipped < opts.Offset && k != nil && bytes.HasPrefix(k, pfx); skipped++ {
		k, v = step()
	}
	var res ListResult
	var last []byte
	for n := 0; k != nil && bytes.HasPrefix(k, pfx); n++ {
		if n == opts.Limit {
			res.HasMore = true
			res.Next = append([]byte{}, last...)
			break
		}
		rel := k[len(pfx):]
		if err := fn(rel, v); err != nil {
			return ListResult{}, err
		}
		last = rel
		k, v = step()
	}
	return res, nil
}

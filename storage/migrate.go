package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
)

// migration moves the schema from version-1 to version. Migrations run in
// order, each in its own transaction together with the version bump, so a
// crash leaves the file at one version or the next, never between.
type migration struct {
	version int
	name    string
	up      func(tx kvTx, env *migrationEnv) error
	// compact: the migration leaves secrets in clear in freed pages, which
	// bbolt does not wipe; the file is rewritten once the migrations end.
	compact bool
}

// migrationEnv is what a migration has besides its transaction: the
// secret key, and notes on what it did that the operator should hear of
// (a record it dropped as one that grants nothing), which are logged once
// its transaction commits.
type migrationEnv struct {
	seal  *sealer
	notes []string
}

func (e *migrationEnv) note(s string) { e.notes = append(e.notes, s) }

// plain adapts a migration that needs no secret key.
func plain(up func(tx kvTx) error) func(kvTx, *migrationEnv) error {
	return func(tx kvTx, _ *migrationEnv) error { return up(tx) }
}

// sealed adapts a migration that needs only the secret key.
func sealed(up func(tx kvTx, s *sealer) error) func(kvTx, *migrationEnv) error {
	return func(tx kvTx, env *migrationEnv) error { return up(tx, env.seal) }
}

// migrations is the ordered schema history. Append only; never edit a
// migration that has shipped.
var migrations = []migration{
	{1, "create the base buckets", plain(migrateBaseBuckets), false},
	{2, "per-account list counts, backfilled", plain(migrateCounts), false},
	{3, "sending domains and templates", plain(migrateDomainsTemplates), false},
	{4, "events, webhooks and their deliveries", plain(migrateWebhooks), false},
	{5, "messages, their queue, per-mode event counts, dedicated IPs", plain(migrateMessages), false},
	{6, "domain status by name, built messages", plain(migrateDomainStatus), false},
	{7, "server secret, message owners, tracked links, engagement, statistics", plain(migrateEngagement), false},
	{8, "grader results", plain(migrateGrader), false},
	{9, "secrets sealed under the secret key file", sealed(sealAll), true},
	{10, "deprecation announcements and the notices sent of them", plain(migrateAnnouncements), false},
	{11, "template aliases", plain(migrateTemplateAliases), false},
	{12, "unsubscribe suppressions for the broadcast stream only", plain(migrateSuppressionStreams), false},
	{13, "inbound domains, routes and received messages", plain(migrateInbound), false},
	{14, "MTA-STS policy cache and TLS report counts", plain(migrateTransport), false},
	{15, "dashboard people, password links, sessions, memberships by email, the audit log", plain(migrateDashboard), false},
	{16, "messages by recipient, tag and campaign, backfilled", plain(migrateMessageIndexes), false},
	{17, "messages by stream and status, backfilled", plain(migrateMessageStatusIndexes), false},
	{18, "TLS report uploads waiting for a retry", plain(migrateTLSRetries), false},
	{19, "recipient addresses keyed with their domain's A-labels: suppressions, messages by recipient and message recipients", plain(migrateAddressKeys), false},
	{20, "account-level addresses keyed with their domain's A-labels: team members, dashboard people, sessions, password links, contact addresses, key makers", migrateLoginAddresses, false},
}

func schemaVersion(tx kvTx) int {
	b := tx.Bucket(bucketMeta)
	if b == nil {
		return 0
	}
	return int(getU64(b.Get(keySchemaVersion)))
}

// migrate runs the migrations of list that the file has not had, and
// reports whether one of them asks for the file to be compacted. The notes
// of a migration go to log (nil: slog's default) once it has committed.
func migrate(db kvStore, list []migration, s *sealer, log *slog.Logger) (compact bool, _ error) {
	current, err := checkSchema(db, list)
	if err != nil {
		return false, err
	}
	if log == nil {
		log = slog.Default()
	}
	for _, m := range list {
		if m.version <= current {
			continue
		}
		compact = compact || m.compact
		env := &migrationEnv{seal: s}
		err := db.Update(func(tx kvTx) error {
			env.notes = nil // fn may run more than once
			if err := m.up(tx, env); err != nil {
				return err
			}
			meta, err := tx.CreateBucketIfNotExists(bucketMeta)
			if err != nil {
				return err
			}
			return meta.Put(keySchemaVersion, putU64(uint64(m.version)))
		})
		if err != nil {
			return compact, fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
		for _, n := range env.notes {
			log.Warn(n, "migration", m.version)
		}
	}
	return compact, nil
}

// checkSchema reads the file's schema version and refuses one newer than
// list knows: an older binary never writes to a newer file.
func checkSchema(db kvStore, list []migration) (int, error) {
	var current int
	if err := db.View(func(tx kvTx) error { current = schemaVersion(tx); return nil }); err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	if latest := list[len(list)-1].version; current > latest {
		return 0, fmt.Errorf("database schema version %d is newer than this build supports (%d): upgrade mailbolt", current, latest)
	}
	return current, nil
}

func migrateBaseBuckets(tx kvTx) error {
	for _, name := range [][]byte{bucketMeta, bucketAccounts, bucketAPIKeys, bucketAPIKeyHashes,
		bucketAPIKeysByAccount, bucketSuppressions, bucketTeam, bucketTeamEmails,
		bucketIdempotency, bucketExpiry} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// migrateCounts adds the counts bucket that list totals are read from and
// fills it from the records already stored, so page-mode totals cost one
// read instead of a walk over every record.
func migrateCounts(tx kvTx) error {
	counts, err := tx.CreateBucketIfNotExists(bucketCounts)
	if err != nil {
		return err
	}
	perOwner := func(bucket []byte, collection string) error {
		totals := map[string]uint64{}
		err := tx.Bucket(bucket).ForEach(func(k, _ []byte) error {
			if i := bytes.IndexByte(k, sep); i > 0 {
				totals[string(k[:i])]++
			}
			return nil
		})
		if err != nil {
			return err
		}
		for owner, n := range totals {
			if err := counts.Put(join(collection, owner), putU64(n)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := perOwner(bucketAPIKeysByAccount, collectionAPIKeys); err != nil {
		return err
	}
	if err := perOwner(bucketSuppressions, collectionSuppressions); err != nil {
		return err
	}
	return perOwner(bucketTeam, collectionTeam)
}

func migrateDomainsTemplates(tx kvTx) error {
	for _, name := range [][]byte{bucketDomains, bucketDomainsByAccount, bucketDomainNames,
		bucketDomainSchedule, bucketTemplates, bucketTemplateVersions} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

func migrateWebhooks(tx kvTx) error {
	for _, name := range [][]byte{bucketEvents, bucketEventBodies, bucketEventOutbox, bucketWebhooks, bucketWebhookIDs,
		bucketDeliveries, bucketDeliveriesByWebhook, bucketDeliveriesByStatus, bucketDeliveryByEvent,
		bucketDeliveryQueue} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// migrateMessages adds messages and their delivery queue, an index of events
// by message, dedicated IPs with their daily counts, and per-mode event
// counts (a test key sees only test events), backfilled from the events
// already stored.
func migrateMessages(tx kvTx) error {
	for _, name := range [][]byte{bucketMessages, bucketMessageContent, bucketMessageQueue, bucketMessageLeases,
		bucketEventsByMessage, bucketIPs, bucketIPCounts} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	totals := map[string]uint64{}
	err := tx.Bucket(bucketEvents).ForEach(func(k, v []byte) error {
		var ev Event
		if err := decodeJSON(k, v, &ev); err != nil {
			return err
		}
		totals[string(join(eventCollection(ev.Test), ev.AccountID))]++
		return nil
	})
	if err != nil {
		return err
	}
	counts := tx.Bucket(bucketCounts)
	for k, n := range totals {
		if err := counts.Put([]byte(k), putU64(n)); err != nil {
			return err
		}
	}
	return nil
}

// migrateDomainStatus adds the status-by-name index that the sending path
// reads instead of whole domain records (which hold the DKIM keys), filled
// from the domains already stored, and the bucket of built messages.
func migrateDomainStatus(tx kvTx) error {
	status, err := tx.CreateBucketIfNotExists(bucketDomainStatus)
	if err != nil {
		return err
	}
	if _, err := tx.CreateBucketIfNotExists(bucketMessageRaw); err != nil {
		return err
	}
	return tx.Bucket(bucketDomains).ForEach(func(k, v []byte) error {
		var d Domain
		if err := decodeJSON(k, v, &d); err != nil {
			return err
		}
		return status.Put(join(d.AccountID, d.Name), []byte(d.Status))
	})
}

// migrateEngagement adds what tracking, inbound reports and analytics
// need: a random server secret (it signs tracking and unsubscribe links),
// the owner of each message by id (inbound reports name only the message),
// backfilled, and buckets for tracked links, per-message engagement and
// daily statistics.
func migrateEngagement(tx kvTx) error {
	for _, name := range [][]byte{bucketMessageOwner, bucketMessageLinks, bucketEngagement, bucketStats} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	if meta.Get(keyServerSecret) == nil {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return err
		}
		if err := meta.Put(keyServerSecret, secret); err != nil {
			return err
		}
	}
	owners := tx.Bucket(bucketMessageOwner)
	return tx.Bucket(bucketMessages).ForEach(func(k, _ []byte) error {
		if i := bytes.IndexByte(k, sep); i > 0 {
			return owners.Put(k[i+1:], k[:i])
		}
		return nil
	})
}

func migrateGrader(tx kvTx) error {
	_, err := tx.CreateBucketIfNotExists(bucketGraderResults)
	return err
}

// migrateAnnouncements adds the record of deprecation announcements and
// of the notices sent of them. A file that already holds accounts comes
// from a server that may have been deprecating a version before it
// recorded announcements: it is marked, so that the first announcement
// it records is taken as that older one (warned about, not refused).
func migrateAnnouncements(tx kvTx) error {
	for _, name := range [][]byte{bucketAnnouncements, bucketNotices} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	if k, _ := tx.Bucket(bucketAccounts).Cursor().First(); k != nil {
		return tx.Bucket(bucketMeta).Put(keyAnnounceUpgrade, []byte{1})
	}
	return nil
}

// migrateTemplateAliases adds the index of template aliases. Templates
// stored before it have no alias, so there is nothing to fill.
func migrateTemplateAliases(tx kvTx) error {
	_, err := tx.CreateBucketIfNotExists(bucketTemplateAliases)
	return err
}

// migrateSuppressionStreams gives unsubscribes the broadcast stream: an
// unsubscribe stops marketing mail, not password resets. Their entries
// move from account\0recipient to account\0recipient\0broadcast; the
// list count is unchanged. Other reasons stay entries for all streams.
func migrateSuppressionStreams(tx kvTx) error {
	b := tx.Bucket(bucketSuppressions)
	if b == nil {
		return nil
	}
	type move struct{ from, to, value []byte }
	var moves []move
	err := b.ForEach(func(k, v []byte) error {
		if bytes.Count(k, []byte{sep}) != 1 {
			return nil // already a one-stream entry
		}
		var s Suppression
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("suppression %q: %w", k, err)
		}
		if s.Reason != "unsubscribe" || s.Stream != "" {
			return nil
		}
		s.Stream = StreamBroadcast
		value, err := json.Marshal(s)
		if err != nil {
			return err
		}
		to := append(bytes.Clone(k), sep)
		moves = append(moves, move{bytes.Clone(k), append(to, StreamBroadcast...), value})
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range moves {
		if err := b.Delete(m.from); err != nil {
			return err
		}
		if err := b.Put(m.to, m.value); err != nil {
			return err
		}
	}
	return nil
}

// migrateInbound adds the buckets of inbound mail. Nothing was received
// before it, so there is nothing to fill.
func migrateInbound(tx kvTx) error {
	for _, name := range [][]byte{bucketInboundDomains, bucketInboundDomainNames, bucketInboundVerified,
		bucketInboundRoutes, bucketInboundRoutesByDomain, bucketInboundMessages, bucketInboundRaw, bucketInboundCounts} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// migrateTransport adds the outbound transport security buckets: the
// MTA-STS policies fetched and the TLS report counts. Both start empty.
func migrateTransport(tx kvTx) error {
	for _, name := range [][]byte{bucketSTSPolicies, bucketTLSCounts} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// migrateTLSRetries adds the bucket of TLS report uploads to be made
// again. Failed uploads were dropped before it, so it starts empty.
func migrateTLSRetries(tx kvTx) error {
	_, err := tx.CreateBucketIfNotExists(bucketTLSRetries)
	return err
}

// migrateDashboard creates the dashboard's buckets and indexes every team
// member by email, so a person's accounts are found without a scan.
func migrateDashboard(tx kvTx) error {
	for _, name := range [][]byte{bucketPeople, bucketPasswordLinks, bucketSessions, bucketSessionsByEmail,
		bucketTeamByEmail, bucketAudit} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	byEmail := tx.Bucket(bucketTeamByEmail)
	return tx.Bucket(bucketTeam).ForEach(func(k, v []byte) error {
		var m TeamMember
		if err := decodeJSON(k, v, &m); err != nil {
			return err
		}
		return byEmail.Put(join(m.Email, m.AccountID), []byte(m.ID))
	})
}

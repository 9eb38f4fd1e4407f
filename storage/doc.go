// Package storage keeps every Mailbolt record and queue in one embedded bbolt
// file, <data-dir>/mailbolt.db. It is the only package that imports bbolt: the
// rest of the program speaks to it through Tx (a unit of work), typed record
// structs and list cursors.
//
// Bucket tree (keys are explicit byte layouts; "·" is the 0x00 separator,
// u64 is a big-endian unsigned integer so that key order is numeric order):
//
//	meta/
//	    schema_version            -> u64
//	    outbox_shards             -> JSON {nodes: {holder: end}, shards: [{holder, until} × 16]}: the
//	                                 outbox shard leases and dispatcher heartbeats, unix nanos
//	                                 (void at open on the embedded engine; see outboxshards.go)
//	    probe                     -> u64 unix-nanos of the last readiness probe (DB.Probe)
//	    return_path_mac_since     -> u64 unix-nanos (when bounce addresses started carrying a MAC)
//	    server_secret             -> sealed 32 random bytes (link and bounce address keys derive from it)
//	    secret_key_check          -> a known text sealed under the secret key (schema v9)
//	    announce_upgrade          -> 1 while a file upgraded to v10 with accounts has recorded no announcement
//	accounts/
//	    <account_id>              -> Account (JSON)
//	api_keys/
//	    <key_id>                  -> APIKey (JSON; SHA-256 of the secret, never the secret)
//	api_key_hashes/
//	    <sha256(secret)>          -> <key_id>
//	api_keys_by_account/
//	    <account_id>·<key_id>     -> ""            (key ids are UUIDv7: creation order)
//	suppressions/
//	    <account_id>·<recipient>  -> Suppression (JSON), for all streams
//	    <account_id>·<recipient>·<stream> -> Suppression (JSON), for one stream
//	                                 (recipient: AddressKey, lower case with the domain's A-labels, since v19)
//	team/
//	    <account_id>·<member_id>  -> TeamMember (JSON)
//	team_emails/
//	    <account_id>·<email>      -> <member_id>
//	                                 (email: AddressKey, as in people, sessions_by_email and team_by_email, since v20)
//	idempotency/
//	    <api_key_id>·<idem_key>   -> IdempotencyRecord (JSON)
//	expiry/
//	    <u64 unix-nanos><kind><record key> -> ""   (what the sweeper removes, oldest first)
//	counts/                                        (schema v2)
//	    <collection>·<account_id> -> u64           (list totals, kept in the same Tx as the records)
//	domains/                                       (schema v3)
//	    <domain_id>               -> Domain (JSON; holds the DKIM private keys)
//	domains_by_account/
//	    <account_id>·<domain_id>  -> ""
//	domain_names/
//	    <account_id>·<name>       -> <domain_id>   (one name per account)
//	domain_schedule/
//	    <u64 unix-nanos><domain_id> -> ""          (next DNS re-check, earliest first)
//	templates/
//	    <account_id>·<template_id> -> Template (JSON; newest version number)
//	template_versions/
//	    <template_id>·<u64 version> -> TemplateVersion (JSON; immutable)
//	events/                                        (schema v4)
//	    <account_id>·<event_id>   -> Event (JSON, without its envelope; event ids are UUIDv7: time order)
//	event_bodies/
//	    <account_id>·<event_id>   -> the envelope bytes webhooks deliver, exactly as signed
//	event_outbox/
//	    <u64 sequence>            -> <account_id>·<event_id>   (awaiting webhook fan-out, commit order)
//	webhooks/
//	    <account_id>·<webhook_id> -> Webhook (JSON; signing secrets)
//	webhook_ids/
//	    <webhook_id>              -> <account_id>
//	deliveries/
//	    <delivery_id>             -> Delivery (binary, deliverycodec.go; every attempt)
//	deliveries_by_webhook/
//	    <webhook_id>·<delivery_id> -> ""
//	deliveries_by_status/
//	    <webhook_id>·<status>·<delivery_id> -> ""
//	delivery_by_event/
//	    <webhook_id>·<event_id>   -> <delivery_id>
//	delivery_queue/
//	    <u64 unix-nanos><delivery_id> -> <webhook_id>   (next attempt or lease expiry, earliest first)
//	messages/                                      (schema v5)
//	    <account_id>·<message_id> -> Message (binary, messagecodec.go, or JSON if written before; envelope, state, per-recipient delivery state)
//	message_content/
//	    <message_id>              -> MessageContent (JSON; subject, bodies, headers, attachment names)
//	message_queue/
//	    <u64 unix-nanos><message_id> -> <account_id>  (send_at, next attempt or lease end, earliest first)
//	message_leases/
//	    <message_id>              -> <account_id>  (attempts in flight; a restart takes them back)
//	events_by_message/
//	    <account_id>·<message_id>·<event_id> -> ""
//	ips/
//	    <address>                 -> IP (JSON; canonical address, pool, warm-up, assigned account)
//	ip_counts/
//	    <address>·<u64 day>       -> u64           (messages sent today; day = days since 1970-01-01 UTC;
//	                                                only the newest day is kept per address)
//	domain_status/                                 (schema v6)
//	    <account_id>·<name>       -> status        (what the sending path checks per message)
//	message_raw/
//	    <message_id>              -> the message as built at acceptance (RFC 5322, unsigned)
//	message_owner/                                 (schema v7; meta/server_secret too)
//	    <message_id>              -> <account_id>  (inbound reports name only the message)
//	message_links/
//	    <message_id>·<u16 index>  -> URL           (where a tracked link redirects)
//	engagement/
//	    <message_id>              -> Engagement (JSON; opens, clicks, first open and click)
//	stats/
//	    <account_id>·<mode>·<dimension>·<u32 day> -> 11 u64 counters (analytics)
//	grader_results/                                (schema v8)
//	    <account_id>·<result_id>  -> GraderResult (JSON; the answer as given)
//	announcements/                                 (schema v10; meta/announce_upgrade too)
//	    <version>·<sunset RFC 3339, or "">  -> Announcement (JSON; one per pair: claimed once)
//	announcement_notices/
//	    <version>·<sunset>·<account_id>·<recipient, or ""> -> Notice (JSON; sent, or why not)
//	template_aliases/                              (schema v11)
//	    <account_id>·<alias>      -> <template_id> (one alias per template, unique per account)
//	inbound_domains/                               (schema v13)
//	    <account_id>·<domain_id>  -> InboundDomain (JSON; its verification token)
//	inbound_domain_names/
//	    <account_id>·<name>       -> <domain_id>   (one name per account)
//	inbound_verified/
//	    <name>                    -> <account_id>·<domain_id>  (a verified name, of one account only;
//	                                                written in the verifying transaction)
//	inbound_routes/
//	    <account_id>·<route_id>   -> InboundRoute (JSON; test: its webhook's mode)
//	inbound_routes_by_domain/
//	    <domain_id>·<pattern>     -> <route_id>    (one route per local part, or "*", per domain)
//	inbound_messages/
//	    <account_id>·<message_id> -> InboundMessage (JSON; one per routed recipient: envelope, size,
//	                                                its event's mode, raw_id, expiry with its event)
//	inbound_raw/
//	    <account_id>·<raw_id>     -> the message exactly as received, once for all its copies
//	                                                (their common expiry is its own)
//	inbound_counts/
//	    <account_id>              -> u32 day · u64 messages · u64 raw bytes received that day
//	                                                (the daily inbound quotas)
//	mta_sts_policies/                              (schema v14)
//	    <domain>                  -> STSPolicy (JSON; the policy file, its id, fetched and expiry times)
//	tls_report_counts/
//	    <u32 day>·<domain>·<policy> -> TLSCount (JSON; successes and failures by type, until reported)
//	people/                                        (schema v15)
//	    <email>                   -> Person (JSON; argon2id hash of the dashboard password, sealed TOTP key, recovery code hashes)
//	                                 (every person's email here and below: AddressKey form since v20)
//	password_links/
//	    <sha256(token)>           -> PasswordLink (JSON; one-time set-password link, 24 h)
//	sessions/
//	    <sha256(session id)>      -> Session (JSON; email, picked account, CSRF token, expiry)
//	sessions_by_email/
//	    <email>·<sha256(session id)> -> ""       (ended together on a password change)
//	team_by_email/
//	    <email>·<account_id>      -> <member_id>   (the accounts a person belongs to)
//	audit/
//	    <account_id>·<entry_id>   -> AuditEntry (JSON; entry ids are UUIDv7: time order)
//	messages_by_recipient/                         (schema v16)
//	    <account_id>·<address>·<message_id> -> ""  (every to, cc and bcc address, AddressKey form since v19)
//	messages_by_tag/
//	    <account_id>·<tag>·<message_id> -> ""
//	messages_by_campaign/
//	    <account_id>·<campaign_id>·<message_id> -> ""
//	messages_by_stream/                            (schema v17)
//	    <account_id>·<stream>·<message_id> -> ""   (transactional or broadcast; fixed for the message's life)
//	messages_by_status/
//	    <account_id>·<status>·<message_id> -> ""   (the current status only: moved in the transaction
//	                                                that rewrites the message with another status)
//	                                                (message ids are UUIDv7: within a value, key order is
//	                                                creation-time order, the order of messages/; written and
//	                                                removed with the message, the status entry moved with its
//	                                                status; see messages_index.go)
//	tls_report_retries/                            (schema v18)
//	    <u64 unix-nanos due><u64 id> -> TLSReportRetry (JSON; a failed TLS report upload to an https: rua,
//	                                                the gzip report as posted, attempts, first attempt;
//	                                                earliest first, at most maxPending: tlsretries.go)
//
// Secrets are sealed (seal.go; schema v9): DKIM private keys in domains,
// webhook secrets in webhooks, meta/server_secret, TOTP keys in people. secretClasses
// (secrets.go) lists them.
//
// Secondary indexes and counts are written in the same transaction as the
// record they describe. Writes go through DB.Update, which groups concurrent
// callers into one bbolt commit (group commit) and returns only after that
// commit is on disk.
//
// After-commit hooks (DB.AfterCommit) are told what each commit filed for
// the workers, as a Change derived from the writes: an event in
// event_outbox, or an entry in delivery_queue or message_queue that is new
// or due sooner than before (a claim, which moves an entry later, is not).
// They run once the commit's fsync has returned and before its callers'
// Update returns, and never for a unit of work that was rolled back; the
// server's one hook wakes the webhook sender and the delivery queue.
//
// Every getter of a tenant's record takes (accountID, id) and reports
// ErrNotFound for another account's record. Records kept by their own id
// alone are checked against their owner first: api_keys, domains and
// deliveries against the record's account, a webhook's delivery lists
// against the webhook's, message_content, message_raw, message_links and
// engagement against message_owner, template_versions against templates. template_aliases
// is keyed by account, so an alias resolves within its own account only.
// Lookups that cross tenants have their own names (APIKeyByHash, APIKeyByID,
// DomainByID, WebhookByID, DeliveryByID, MessageOwner, VerifiedInboundDomain) and serve authentication, the
// operator and the workers, never a request made for a tenant.
package storage

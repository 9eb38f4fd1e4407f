// Package hooks is the webhook worker: it matches committed events to the
// webhooks subscribed to them, sends each a signed POST (spec §6), keeps
// the retry state machine of spec §3 and §6, and checks every address it
// dials against the Guard. Its failure rules come first.
//
// # Answers, retries and retention
//
// An answer decides an attempt (Classify): any 2xx delivers; no complete
// answer (a network or TLS error, or no status and body within Timeout)
// and 408, 429 or any 5xx are retried; anything else, 3xx included (redirects are not
// followed), fails the delivery at once. An address the Guard refuses fails
// it at once too: every retry would be refused. A panic while sending is
// recovered, counted (Panics) and taken as an attempt with no answer.
//
// An answer is complete when its status, its headers and its body have
// come: the whole body, or its first 65 KiB when it is longer, since an
// attempt reads no more (it keeps the first 1 KiB, discards the rest and
// closes the connection of a longer body). A status whose body is still
// coming at the deadline is a timeout, and a body that breaks off a
// failure: either is an attempt with no status, retried, whatever the
// status was (the error names it). Latency runs to the end of the attempt.
//
// Retry n (from 0) waits BaseDelay doubled n times, at most MaxDelay,
// counted from the end of the failed attempt; a Retry-After on a 429 or
// 503 replaces that wait, still at most MaxDelay (a value of neither of
// RFC 9110's forms, a negative one say, is ignored; see RetryAfter). At most MaxRetries
// retries follow the first attempt (0: none); a retryable failure with
// none left fails the delivery. A delivered delivery is kept
// DeliveredRetention (30 days), a failed one FailedRetention (7 days, in
// which it can be replayed with a fresh retry budget); then the sweeper
// removes it. Delivery is at least once: a receiver may get an event twice
// and deduplicates on its id.
//
// # The fresh path: straight from the outbox
//
// An event is committed with an outbox entry. When free workers can take
// all its requests at once, its webhooks' hosts are below PerHost, its
// envelope is in the history and every signing secret decodes, its
// requests go out at once with nothing written first: the outbox entry is
// the durable record that the event still has to be delivered. When its
// last answer is back, one transaction saves a delivery per webhook, with
// its one attempt, and removes the entry. Answers do not wait for a slow
// sibling much longer than splitHold (20 ms; the write then goes out with
// the loop's next write, which may hold up to 5 ms more for company): then
// the answers back are saved
// the same way and each request still out as a claimed delivery (an
// Unanswered attempt, and a lease of Timeout plus 30 s from when it was
// sent), in the transaction that removes the entry. The event is split:
// the answers still to come replace those attempts, as on the queued path,
// and each delivery's retry is scheduled from its own answer.
//
//   - A crash before that commit leaves the entry: the event is sent again
//     after the restart, as a first attempt, and the lost requests leave no
//     trace. A crash after a split leaves the requests that were out as
//     the queued path's crash does: interrupted once their lease is over.
//   - A webhook deleted while its request was out gets no delivery.
//   - An event with more matching webhooks than free workers (but no more
//     than Workers) waits for requests to come back. Any other event goes
//     the queued path whole: a host at its cap, more matching webhooks than
//     Workers, an envelope gone from the history, or a secret that cannot
//     be read. An event no webhook matches just leaves the outbox.
//   - The outbox is split into storage.OutboxShards shards (an entry's
//     sequence number modulo 16), and one dispatcher at a time sends from
//     each: it holds a lease on the shard in storage (meta/outbox_shards)
//     for Timeout plus OutboxLeaseMargin, renews it when half over and
//     gives it up when Run returns. Alone, a dispatcher holds every shard.
//     With several (one per node over a shared database) each renews a
//     heartbeat with its leases and moves towards its fair share,
//     ceil(16 / live dispatchers): one holding more gives back its
//     highest shards at renewal (once the entries it took from them are
//     saved), one holding fewer takes free ones. A dispatcher that dies
//     keeps its shards until its leases end; then the others take them
//     and send their entries, again those it had sent and not saved.
//   - A lease Run could not give up (a failed write) holds the others'
//     fresh sends from its shards back until it runs out; opening the
//     embedded database drops those left by a process that ended (a
//     shared database keeps them: they may be a live node's).
//   - An event that two dispatchers both sent (the shard changed hands
//     while its requests were out) gets the deliveries of the one that
//     saves first; the other's answers are dropped.
//
// # The queued path: claimed before sent
//
// Retries, replays and the events the fresh path hands over are pending
// deliveries in the delivery queue, taken earliest due first; due work is
// claimed before fresh events are taken, unless it waits on a host at its
// cap. A claim saves an attempt marked Unanswered and moves the
// delivery's next attempt to a lease of Timeout plus 30 s, all before the
// request goes out; the answer then replaces that attempt.
//
//   - A crash mid-request leaves the attempt Unanswered, and InFlight
//     reports it until the lease runs out, across the restart too. Then
//     the next claim counts it as a retryable failure with the error
//     "interrupted: …" and sends again at once, or fails the delivery when
//     no retries are left.
//   - A webhook secret that cannot be read fails the delivery at once, with
//     an attempt that says why and no request sent; so does an event gone
//     from the history.
//   - Deleting a webhook deletes its deliveries; an answer that comes back
//     for one is dropped.
//
// # Disabled webhooks and test requests
//
// A webhook stored Disabled is matched to no event: an event matched while
// it is disabled is never sent to it, and its pending deliveries go on. No
// webhook is matched to an event recorded before it was created (its
// timestamp before the webhook's CreatedAt), though the event may still be
// in the outbox when it is.
// Try sends one request to a webhook outside both paths (POST
// /v1/webhooks/{id}/test): signed, guarded and bounded like a delivery,
// but nothing is stored, it is never retried, and Answered is not told.
//
// # Shutdown and storage failures
//
// When Run's context ends, nothing new is sent, and the requests in flight
// get ShutdownGrace (serve's --shutdown-grace) to be answered: those
// answers are saved as attempts, so the next start does not send them
// again. The requests still out when the grace is over are cut off and put
// back, not counted as attempts: a claimed delivery (a split event's
// request too) loses its Unanswered attempt and is due at once; a fresh
// event's cut-off request becomes a pending delivery with no attempt. Every answer is saved in the same last
// write. If that write fails, Run returns the error, and what it
// held is handled as after a crash.
//
// Answers are saved in the background, one write at a time holding every
// answer since the previous one, so sending goes on while a commit waits
// for its fsync. While requests are out, a write waits up to writeHold
// (5 ms) for more answers to join it, and free senders wait up to
// takeHold (1 ms) for others before the outbox is read: under load one
// commit and one read serve many events. A write that fails is logged and tried again with the
// same answers a second later; fresh sending pauses until then, and the
// answered requests are not sent again unless the process stops before a
// write succeeds. A failed read is logged, and the loop goes on with what
// it read.
//
// Options.Now is the one clock: attempt times, signature timestamps,
// latencies, leases, due times and retry delays are read from it. Waits
// are real timers, set to durations computed on it.
package hooks

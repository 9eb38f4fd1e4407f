// Package queue is the delivery worker: it takes accepted messages from the
// durable queue in storage, sends them through the SMTP client (package
// mta) or the sandbox, and records what happened, with the events and
// suppressions that follow. It also holds the message lifecycle those steps
// share: the message and recipient states and the one table of moves
// between them (state.go), acceptance (accept.go), asynchronous bounces and
// complaints reported later (record.go), and the choice of source IP under
// warm-up (sourceip.go, warmup.go).
//
// Failure rules, first:
//
//   - Durable before sent. A message is claimed in a transaction that
//     counts the attempt, moves its waiting recipients to sending and files
//     a lease (message_leases, and the queue entry moved to the lease's
//     end) before any connection is made. A crash therefore never sends
//     twice at once, and never retries in a storm: the next process takes
//     every lease it finds back at start (recoverLeases) and tries those
//     messages once more, as deferred.
//   - Errors are temporary unless the receiving server said otherwise. A
//     connection failure, a timeout, a 4xx reply or "no outbound delivery
//     configured" defers the recipient: the next attempt waits
//     Backoff(attempts) — RetryBase, doubling, at most RetryMax — and a
//     recipient still failing QueueLifetime after its message was queued
//     soft-bounces (category expired). A 5xx reply, a null MX (RFC 7505) or
//     a message that cannot be built or signed bounces it; mta.Classify
//     gives the bounce type and category from the enhanced status code
//     (RFC 3463). Hard bounces and complaints suppress the address; a block
//     does not (it is about us, not the address).
//   - Shutdown stops claiming at once but does not cut the SMTP
//     transactions in flight: the receiving server may already hold the
//     message, and cutting one off before its final reply means sending
//     it again. They get ShutdownGrace to finish and record their outcome.
//     An attempt still running when the grace is over is cut off and
//     recorded with its recipients deferred and due at once, its lease
//     given up, so the next start resumes it (at least once: the receiver
//     may then get the message twice).
//   - The outcome of one attempt (states, events, statistics, suppressions,
//     the lease given up) is one transaction: a webhook never reports a
//     delivery the message record does not show.
//   - Every state change of a recipient goes through the table in
//     state.go; a move it does not list is a bug and fails the transaction
//     rather than storing a state nothing else expects.
//
// The queue is woken by Kick after a transaction files a message (storage
// runs the hook after commit) and otherwise polls at most every Poll, or at
// the next attempt's time when that is sooner.
package queue

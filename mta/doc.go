// Package mta is Mailbolt's mail transfer side: the outbound SMTP client
// (Deliverer: MX routing, connection pooling, pipelined transactions),
// bounce classification (Classify), DKIM keys and signing, message
// building and link tracking, and the inbound listener. DNS lookups are
// package mta/dns.
package mta

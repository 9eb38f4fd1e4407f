// Package mta is Mailbolt's mail transfer side: the outbound SMTP client
// (Deliverer: MX routing, connection pooling, pipelined transactions),
// bounce classification (Classify), message building and link tracking,
// and the inbound listener. DNS lookups are package mta/dns, DKIM keys
// and signing mta/dkim.
package mta

// Package mta is Mailbolt's mail transfer side: the outbound SMTP client
// (Deliverer: MX routing, connection pooling, pipelined transactions),
// bounce classification (Classify) and the inbound listener. DNS lookups
// are package mta/dns, DKIM keys and signing mta/dkim, message building
// and link tracking mta/message.
package mta

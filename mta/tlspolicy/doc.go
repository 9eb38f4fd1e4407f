// Package tlspolicy parses the DNS records and the policy file by which a
// domain asks senders for TLS: the MTA-STS record and policy (RFC 8461) and
// the TLS-RPT record (RFC 8460). It is the one parser of them: the sender
// (mta, mta/transport) enforces what it reads, and the grader's MTA-STS and
// TLS-RPT checks judge with it. It does no I/O.
package tlspolicy

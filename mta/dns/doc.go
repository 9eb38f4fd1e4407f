// Package dns looks DNS records up by asking one configured server (the
// --dns-server of serve, or the first nameserver of /etc/resolv.conf)
// directly, with no cache of its own. It is the one resolver that
// everything in Mailbolt shares: MX routing in mta, domain verification
// in app, the check of a webhook URL's host when it is created, and the
// grader's SPF, DKIM, DMARC and blocklist checks.
//
// Lookups separate three outcomes that callers must never confuse: an
// answer, a definite absence (ErrNotFound: NXDOMAIN, or no record of that
// type), and a failure to learn either (a *TempError: timeout, SERVFAIL,
// REFUSED, network error; IsTemporary tells). Only the first two say
// anything about the zone; a caller keeps its earlier conclusions when a
// lookup fails.
//
// A truncated UDP answer is asked again over TCP, and a CNAME chain inside
// an answer is followed. TXT records come back as raw bytes with their
// strings joined, as SPF and DKIM read them.
package dns

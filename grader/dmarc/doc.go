// Package dmarc evaluates Domain-based Message Authentication, Reporting and
// Conformance (RFC 7489) for the RFC5322.From domain of a message, given the
// SPF and DKIM results already computed for it. The grader and the inbound
// listener share it.
//
// Failure rules, first because every caller depends on them:
//
//   - A DNS lookup that fails without an answer (timeout, SERVFAIL, any
//     error the Resolver does not report as "not found") gives TempError;
//     it never falls through to the organizational domain, because the set
//     of records at the From domain is unknown, not empty (§6.6.3). How to
//     treat it (fail open or a 4xx) is the receiver's choice (§6.6.3, last
//     paragraph); the Policy reported with it is "none", as no record is
//     known.
//   - No DMARC record at the From domain nor at its organizational domain,
//     or two or more records at the first of those names that has any:
//     None, and no policy applies (§6.6.3 steps 3 and 5). TXT records that
//     do not begin with "v=DMARC1" are not DMARC records and are dropped
//     before counting (steps 2 and 4).
//   - A record whose "p" tag is missing or invalid, or whose "sp" tag is
//     invalid, is read as "p=none" when its "rua" tag holds at least one
//     valid URI (§6.6.3 step 6.1, Record.PolicyFallback); otherwise it is
//     unusable: no policy applies, as with no record (step 6.2), and the
//     result is PermError (§11.2: "a syntactically incorrect DMARC record"),
//     so that callers can tell a broken record from a missing one. It still
//     counts as the record at its name: discovery does not go on to the
//     organizational domain (only step 2 discards records).
//   - Every other syntax error discards only its own tag, in favour of the
//     default (§6.3); Record.Warnings lists them. Unknown tags are ignored
//     (§6.3). Duplicate tags keep the first occurrence.
//   - With a usable record the result is Pass when an SPF pass or a DKIM
//     pass exists for an identifier aligned with the From domain (§4.2),
//     and otherwise Fail — except that a temperror of SPF or of a DKIM
//     signature for an aligned identifier gives TempError, since a retry
//     could turn it into a pass (§11.2).
//
// Identifier alignment (§3.1): "strict" requires the authenticated domain to
// equal the From domain; "relaxed" (the default of adkim and aspf) requires
// their organizational domains to be equal (§3.1.1 DKIM d=, §3.1.2 the SPF
// identity, i.e. the RFC5321.MailFrom domain or, for a null reverse-path,
// the HELO name). Names compare case-insensitively, without a final dot,
// with IDNs as A-labels.
//
// Organizational domain (§3.2): the public suffix of the name plus one
// label, from golang.org/x/net/publicsuffix (ICANN and private sections, as
// the library ships them). A name that is itself a public suffix has none
// (OrgDomain returns ""); Evaluate then uses the name itself, for alignment
// and for discovery (which then makes a single query).
//
// Policy (§6.3, §6.6.3; RFC 9091 §4.1 for np): a record found at the From
// domain itself applies "p". A record found at the organizational domain on
// behalf of a subdomain applies "np" when the subdomain does not exist (no
// A, AAAA or MX record: RFC 9091 §2.1; checked only when the Resolver also
// implements AddressResolver, and a lookup failure counts as "exists"),
// otherwise "sp", and "p" when those tags are absent. Result.Policy is the
// policy so selected, reported for Pass as for Fail (PolicyNone without a
// usable record); it is what the domain asks for when the result is Fail.
// Result.Disposition applies the "pct" sampling of §6.6.4 to it. The public-suffix-domain lookups of RFC 9091 (PSD DMARC)
// are not made.
//
// go-msgauth's dmarc package is not used: its Parse rejects a whole record
// for one bad optional tag (where §6.3 discards the tag), accepts "v=DMARC1"
// anywhere in the record (§6.3 wants it first), knows neither np nor the
// "rua" fallback of §6.6.3 step 6, and its Lookup picks the first of
// several records and does no organizational-domain fallback. Its parser
// serves as a cross-check in the fuzz test instead.
//
// The DNS is reached only through the Resolver interface; *dns.Resolver
// (mta/dns) implements it, and tests use in-memory zones and mta/dns/dnstest.
package dmarc

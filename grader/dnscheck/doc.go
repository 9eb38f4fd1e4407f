// Package dnscheck grades a sending domain on observable DNS signals: the
// "DNS health" and "reputation" dimensions of the deliverability grader.
//
// Every point comes from a rule in Rules (ID, dimension, weight and how
// the points are awarded), so the scoring table is data that the
// documentation and the API can show as it is. Check runs every rule's
// lookups in parallel under one deadline and returns, per dimension, the
// points awarded out of the points possible, plus findings (info, warning,
// critical; the category is the rule ID) and recommendations that give the
// record to publish where one can be named.
//
// DNS health: MX (null MX noted), SPF (one record, syntax, the 10-lookup
// and 2-void-lookup limits of RFC 7208 §4.6.4, the all qualifier; evaluated
// with mailbolt/grader/spf), DMARC (discovery with organizational-domain
// fallback via mailbolt/grader/dmarc, p=, sp=, pct=, rua=), DKIM keys for a
// list of selectors (type and size; a random selector is asked first so
// that a wildcard TXT record is not mistaken for keys), MTA-STS, TLS-RPT
// and BIMI (noted, not scored; needs DMARC enforcement).
//
// Reputation: DNS blocklists for the sending IP (reversed octets or IPv6
// nibbles under each zone) and for the domain and its organizational
// domain. An A answer in 127.255.255.0/24, or 127.0.0.1, means the list
// refused the query (Spamhaus answers so to public resolvers, URIBL uses
// 127.0.0.1), never a listing; other 127.0.0.0/8 answers are listings.
// Forward-confirmed reverse DNS of the sending IP and of the MX hosts'
// addresses, and the HELO name against the confirmed PTR name.
//
// DNS answers have three outcomes, kept apart as mta/dns does: a
// record, nothing there (judged: the rule usually scores 0), and a failed
// lookup (not judged: the rule is left out of Score and Max and a warning
// says it "could not be checked").
package dnscheck

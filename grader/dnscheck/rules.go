package dnscheck

// Dimensions a rule scores toward.
const (
	DimensionDNSHealth  = "dns_health"
	DimensionReputation = "reputation"
)

// Severities of a finding.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// Rule IDs, one per entry of Rules.
const (
	RuleMX               = "mx"
	RuleSPFRecord        = "spf_record"
	RuleSPFLimits        = "spf_limits"
	RuleSPFAll           = "spf_all"
	RuleDMARCRecord      = "dmarc_record"
	RuleDMARCPolicy      = "dmarc_policy"
	RuleDMARCReports     = "dmarc_rua"
	RuleDKIM             = "dkim"
	RuleMTASTS           = "mta_sts"
	RuleTLSRPT           = "tls_rpt"
	RuleBIMI             = "bimi"
	RuleIPBlocklists     = "ip_blocklists"
	RuleDomainBlocklists = "domain_blocklists"
	RuleIPFCrDNS         = "ip_fcrdns"
	RuleHELOMatchesPTR   = "helo_ptr"
	RuleMXFCrDNS         = "mx_fcrdns"
)

// Rule is one scored, observable check: the points it can award (Weight)
// toward its dimension, and how they are awarded.
type Rule struct {
	ID        string
	Dimension string
	Weight    int
	Describe  string
}

// Rules is the scoring table. A dimension's Max is the sum of the weights
// of its rules that apply to the input and could be judged: rules about
// the sending IP or HELO apply only when those are given, and a rule whose
// lookups failed without an answer (timeout, SERVFAIL) is left out of both
// Score and Max, with a finding saying it could not be checked. Missing
// records are judged (they score 0), failed lookups are not.
var Rules = []Rule{
	{RuleMX, DimensionDNSHealth, 10, "MX records exist and every exchange resolves to an address (10; 5 when only some do; 0 without MX or when none resolves). A null MX (RFC 7505) scores 10 with an info finding: the domain takes no mail."},
	{RuleSPFRecord, DimensionDNSHealth, 10, "Exactly one v=spf1 TXT record at the domain, and it parses (RFC 7208 §4.5, §4.6.1)."},
	{RuleSPFLimits, DimensionDNSHealth, 5, "At most 10 DNS-querying terms (include, a, mx, ptr, exists, redirect; counted through includes and redirects) and at most 2 void lookups, with every include target publishing a record (RFC 7208 §4.6.4). 0 without a usable record."},
	{RuleSPFAll, DimensionDNSHealth, 5, "The record ends in a strict default: -all 5, ~all 4 (the monitoring stage; info), ?all 0 (warning), +all 0 (critical), no all and no redirect 0 (warning). With redirect= and no all, the target record's all counts."},
	{RuleDMARCRecord, DimensionDNSHealth, 10, "A usable DMARC record at _dmarc.<domain> or at the organizational domain (RFC 7489 §6.6.3)."},
	{RuleDMARCPolicy, DimensionDNSHealth, 10, "Policy strength: p=reject 10, p=quarantine 8, p=none with a rua= address 5 (the monitoring stage; info), p=none without one 0 (warning); minus 3 when sp= is weaker than p=, minus 2 when pct is below 100 (never below 0)."},
	{RuleDMARCReports, DimensionDNSHealth, 5, "The DMARC record asks for aggregate reports (a valid rua= URI)."},
	{RuleDKIM, DimensionDNSHealth, 15, "DKIM public keys found at <selector>._domainkey.<domain> for the checked selectors, judged by the weakest: ed25519 or RSA of 2048 bits or more 15, RSA 1024-2047 8 (warning), RSA under 1024 0 (critical); no trusted key 0 (warning). When a random selector answers (wildcard TXT), hits that return the wildcard's text are not trusted."},
	{RuleMTASTS, DimensionDNSHealth, 3, "One valid MTA-STS record (v=STSv1 with an id) at _mta-sts.<domain> (RFC 8461), read with the sender's parser (mta/tlspolicy); the policy file is not fetched. Bonus: info when missing, a warning when invalid."},
	{RuleTLSRPT, DimensionDNSHealth, 2, "One valid TLS-RPT record (v=TLSRPTv1 with a mailto: or https: rua) at _smtp._tls.<domain> (RFC 8460), read with the sender's parser. Bonus: info when missing, a warning when invalid."},
	{RuleBIMI, DimensionDNSHealth, 0, "A BIMI record (v=BIMI1) at default._bimi.<domain> is noted; it needs DMARC enforcement (p=quarantine or reject), a warning otherwise. Not scored."},
	{RuleIPBlocklists, DimensionReputation, 15, "The sending IP is listed on none of the IP blocklists (DNSBL A query of the reversed address under each zone; IPv6 as nibbles). An answer in 127.255.255.0/24 or 127.0.0.1 means the list refused the query, not a listing. Applies when a sending IP is given."},
	{RuleDomainBlocklists, DimensionReputation, 10, "The domain (and its organizational domain) is listed on none of the domain blocklists, read like the IP lists."},
	{RuleIPFCrDNS, DimensionReputation, 10, "Forward-confirmed reverse DNS of the sending IP: a PTR name whose A/AAAA records contain the IP. Applies when a sending IP is given."},
	{RuleHELOMatchesPTR, DimensionReputation, 5, "The HELO name equals a forward-confirmed PTR name of the sending IP. Applies when both are given."},
	{RuleMXFCrDNS, DimensionReputation, 5, "Every address of every MX host has forward-confirmed reverse DNS (5; 0 when any does not). Applies when the domain has MX hosts that resolve."},
}

// rule returns the entry of Rules with the given ID.
func rule(id string) Rule {
	for _, r := range Rules {
		if r.ID == id {
			return r
		}
	}
	panic("dnscheck: unknown rule " + id)
}

package app

import (
	"context"
	"net"
	"strings"
	"time"
	"unicode/utf8"

	"mailbolt/mta/dkim"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// DomainOptions configure what a sending domain must publish and how often
// it is checked.
type DomainOptions struct {
	// Resolver answers DNS lookups (the --dns-server).
	Resolver DNSResolver
	// Hostname is this server's mail host name: the return-path CNAME points
	// at it, and it is the SPF mechanism (a:<hostname>) when neither
	// SPFInclude nor SendingIPs is set.
	Hostname string
	// SPFInclude, when set, is the domain whose SPF record lists this
	// server's addresses; the user publishes include:<SPFInclude>.
	SPFInclude string
	// SendingIPs are this server's outbound addresses (ip4:/ip6: mechanisms).
	SendingIPs []net.IP
	// TrackingHost, when set, is the target of the tracking CNAME.
	TrackingHost string
	// RecheckInterval is how often a domain's records are looked up again; 24 h.
	RecheckInterval time.Duration
	// RotationGrace is how long a replaced DKIM record must stay published
	// before it is reported removable; 7 days.
	RotationGrace time.Duration
	// CheckTimeout bounds one verification's lookups; 15 s.
	CheckTimeout time.Duration
}

// DNSResolver is the lookups domain verification needs.
type DNSResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupCNAME(ctx context.Context, name string) (string, error)
}

// Labels of the subdomains a sending domain publishes for Mailbolt.
const (
	ReturnPathLabel = queue.ReturnPathLabel
	TrackingLabel   = "track"
)

// Purposes of DNS records.
const (
	PurposeDKIM       = "dkim"
	PurposeSPF        = "spf"
	PurposeReturnPath = "return_path"
	PurposeDMARC      = "dmarc"
	PurposeTracking   = "tracking"
)

// Record statuses.
const (
	RecordPending   = "pending" // not looked up yet
	RecordVerified  = "verified"
	RecordMissing   = "missing"
	RecordMismatch  = "mismatch"
	RecordRemovable = "removable" // a replaced DKIM key whose grace period is over
)

// DNSRecord is one record the user must publish, with what the last check
// found.
type DNSRecord struct {
	Type     string
	Name     string
	Value    string // pasteable: long TXT values split into quoted 255-byte strings
	Purpose  string
	Required bool // needed for the domain to be verified
	Status   string
	Found    []string
	Error    string // why the last lookup failed, if it did
	// DKIM records only.
	Selector       string
	Active         bool       // this key signs outgoing mail
	RemovableAfter *time.Time // for a replaced key: when it may be unpublished
}

// spfMechanism is the SPF term that authorises this server.
func (o DomainOptions) spfMechanisms() []string {
	switch {
	case o.SPFInclude != "":
		return []string{"include:" + o.SPFInclude}
	case len(o.SendingIPs) > 0:
		var out []string
		for _, ip := range o.SendingIPs {
			if ip.To4() != nil {
				out = append(out, "ip4:"+ip.String())
			} else {
				out = append(out, "ip6:"+ip.String())
			}
		}
		return out
	}
	return []string{"a:" + o.Hostname}
}

func dkimName(selector, domain string) string { return selector + "._domainkey." + domain }

// Records lists every record the domain needs, with the status its last
// check recorded.
func (a *App) Records(d storage.Domain) []DNSRecord {
	o := a.opts.Domains
	now := a.Now()
	active, hasActive := d.ActiveKey()
	var out []DNSRecord
	for i, k := range d.DKIMKeys {
		key := dkim.Key{Algorithm: k.Algorithm, PublicB64: k.PublicKey}
		isActive := hasActive && k.Selector == active.Selector
		// The signing key's record is required; before any key signs, the
		// first key's is. A rotation's new key is not: until it verifies,
		// the domain keeps signing with the old one.
		required := isActive || (!hasActive && i == 0)
		r := DNSRecord{Type: "TXT", Name: dkimName(k.Selector, d.Name), Value: dkim.SplitTXT(key.RecordValue()),
			Purpose: PurposeDKIM, Required: required, Selector: k.Selector, Active: isActive}
		if k.RetiredAt != nil {
			after := k.RetiredAt.Add(o.RotationGrace)
			r.RemovableAfter = &after
		}
		out = append(out, r)
	}
	out = append(out,
		DNSRecord{Type: "TXT", Name: d.Name, Purpose: PurposeSPF, Required: true,
			Value: "v=spf1 " + strings.Join(o.spfMechanisms(), " ") + " ~all"},
		DNSRecord{Type: "CNAME", Name: ReturnPathLabel + "." + d.Name, Value: o.Hostname, Purpose: PurposeReturnPath},
		DNSRecord{Type: "TXT", Name: "_dmarc." + d.Name, Purpose: PurposeDMARC,
			Value: "v=DMARC1; p=none; rua=mailto:dmarc-reports@" + d.Name})
	if o.TrackingHost != "" {
		out = append(out, DNSRecord{Type: "CNAME", Name: TrackingLabel + "." + d.Name, Value: o.TrackingHost, Purpose: PurposeTracking})
	}
	for i := range out {
		r := &out[i]
		r.Status = RecordPending
		for _, c := range d.Checks {
			if c.Purpose == r.Purpose && c.Name == r.Name {
				r.Status, r.Found, r.Error = c.Status, c.Found, c.Error
			}
		}
		found := r.Found // for the SPF suggestion: the records whole
		if r.Purpose == PurposeSPF && r.Status == RecordMismatch {
			// Suggest the user's own record with our mechanism added: a
			// domain may publish only one SPF record.
			var spf []string
			for _, txt := range found {
				if isSPF(txt) {
					spf = append(spf, txt)
				}
			}
			if len(spf) == 1 {
				r.Value = mergeSPF(spf[0], o.spfMechanisms())
			}
		}
		r.Found = shownFound(*r, found)
		if r.RemovableAfter != nil && !now.Before(*r.RemovableAfter) {
			r.Status = RecordRemovable
		}
	}
	return out
}

// MaxFoundBytes bounds each value of DNSRecord.Found.
const MaxFoundBytes = 512

// OtherCNAMETarget stands in DNSRecord.Found for a CNAME target that is
// not the one asked for.
const OtherCNAMETarget = "(another target)"

// keptFound is what a check keeps of the answers at r's name: only
// records of the kind r is (SPF, DMARC, a DKIM key), and a CNAME's target
// only when it is the one asked for. The lookups go through the server's
// resolver, which may see internal (split-horizon) names; echoing any TXT
// or target it returns would let a tenant read them.
func keptFound(r DNSRecord, answers []string) []string {
	var out []string
	for _, v := range answers {
		switch r.Purpose {
		case PurposeSPF:
			if isSPF(v) {
				out = append(out, v)
			}
		case PurposeDMARC:
			if isDMARC(v) {
				out = append(out, v)
			}
		case PurposeDKIM:
			if isDKIMKey(v) {
				out = append(out, v)
			}
		default: // CNAMEs
			if strings.EqualFold(strings.TrimSuffix(v, "."), r.Value) {
				out = append(out, v)
			} else {
				out = append(out, OtherCNAMETarget)
			}
		}
	}
	return out
}

// shownFound is what the API shows of the kept answers (records checked
// before keptFound existed pass through it too), each cut to MaxFoundBytes.
func shownFound(r DNSRecord, kept []string) []string {
	out := keptFound(r, kept)
	for i, v := range out {
		out[i] = truncateUTF8(v, MaxFoundBytes)
	}
	return out
}

// truncateUTF8 cuts s to at most n bytes, not inside a UTF-8 sequence.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > n-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if !utf8.RuneStart(s[cut]) {
		cut = n // not UTF-8 text: cut at the byte
	}
	return s[:cut]
}

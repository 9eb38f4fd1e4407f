package inbound

import (
	"strconv"
	"strings"
)

// verpLabel is the first label of the bounce domain; it must equal
// queue.ReturnPathLabel (package mta/queue, which writes the return path;
// this package may not import it).
const verpLabel = "bounces"

// VERP is a Mailbolt return path read back (ParseVERP). Everything in it is
// lower case.
type VERP struct {
	// MessageID is the message id in its usual 8-4-4-4-12 form.
	MessageID string
	// Index is the recipient's position in the message, and MAC what the
	// address claims as its MAC (queue.ReturnPathMAC); both are absent from
	// the old form (Legacy), which names the message only.
	Index  int
	MAC    string
	Legacy bool
	// Domain is the sending domain: the address's domain without its
	// "bounces." label.
	Domain string
}

// ParseVERP reads a Mailbolt return path, the per-recipient form
// "b+<32 hex digits>.<recipient index>.<MAC>@bounces.<domain>"
// (queue.ReturnPath) or the old per-message form "b+<32 hex
// digits>@bounces.<domain>" (Legacy). Angle brackets and an "rfc822;" type
// around the address are allowed; the address is read case-insensitively,
// since some systems change its case. It checks the syntax only: whether
// the MAC is right and <domain> one of ours is for the caller to check.
func ParseVERP(addr string) (VERP, bool) {
	a := strings.ToLower(bareAddress(addr))
	local, domain, found := strings.Cut(a, "@")
	if !found || !strings.HasPrefix(domain, verpLabel+".") || len(domain) == len(verpLabel)+1 || strings.Contains(domain, "@") {
		return VERP{}, false
	}
	rest, isVERP := strings.CutPrefix(local, "b+")
	if !isVERP || len(rest) < 32 {
		return VERP{}, false
	}
	hex, tail := rest[:32], rest[32:]
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return VERP{}, false
		}
	}
	v := VERP{MessageID: hex[:8] + "-" + hex[8:12] + "-" + hex[12:16] + "-" + hex[16:20] + "-" + hex[20:],
		Domain: domain[len(verpLabel)+1:]}
	if tail == "" {
		v.Legacy = true
		return v, true
	}
	idx, mac, ok := strings.Cut(strings.TrimPrefix(tail, "."), ".")
	if !ok || tail[0] != '.' || idx == "" || len(idx) > 4 || mac == "" || len(mac) > 52 {
		return VERP{}, false
	}
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 || strconv.Itoa(n) != idx {
		return VERP{}, false
	}
	for i := 0; i < len(mac); i++ {
		if c := mac[i]; !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return VERP{}, false
		}
	}
	v.Index, v.MAC = n, mac
	return v, true
}

package inbound

import "strings"

// verpLabel is the first label of the bounce domain; it must equal
// queue.ReturnPathLabel (package mta/queue, which writes the return path;
// this package may not import it).
const verpLabel = "bounces"

// ParseVERP reads a Mailbolt return path, "b+<32 hex digits>@bounces.<domain>"
// (queue.ReturnPath: the message id without its dashes), and returns the
// message id in its usual 8-4-4-4-12 form, lower case. Angle brackets and
// an "rfc822;" type around the address are allowed; the address is read
// case-insensitively, since some systems change its case. Whether <domain>
// is one of ours is for the caller to check.
func ParseVERP(addr string) (messageID string, ok bool) {
	a := strings.ToLower(bareAddress(addr))
	local, domain, found := strings.Cut(a, "@")
	if !found || !strings.HasPrefix(domain, verpLabel+".") || len(domain) == len(verpLabel)+1 || strings.Contains(domain, "@") {
		return "", false
	}
	hex, isVERP := strings.CutPrefix(local, "b+")
	if !isVERP || len(hex) != 32 {
		return "", false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", false
		}
	}
	return hex[:8] + "-" + hex[8:12] + "-" + hex[12:16] + "-" + hex[16:20] + "-" + hex[20:], true
}

package dnscheck

import (
	"testing"

	"mailbolt/mta/dns/dnstest"
)

// zone is the loopback DNS server these tests publish in (PTR records
// and a wildcard TXT included).
type zone = dnstest.Server

func startZone(t testing.TB) *zone { return dnstest.Start(t) }

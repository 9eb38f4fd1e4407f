package queue

import (
	"strings"
	"testing"

	"mailbolt/storage"
)

// A return path names the message and the recipient under a MAC that
// depends on each, reads the same in any case, and keeps its local part
// within RFC 5321's 64 octets for every recipient a message may have.
func TestReturnPath(t *testing.T) {
	m := storage.Message{ID: "0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", Domain: "acme.test"}
	p := ReturnPath(testKey, m, 7)
	local, domain, _ := strings.Cut(p, "@")
	mac := ReturnPathMAC(testKey, m.ID, 7, m.Domain)
	if domain != "bounces.acme.test" || local != "b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b.7."+mac || len(mac) != 24 || mac != strings.ToLower(mac) {
		t.Fatalf("ReturnPath = %s", p)
	}
	if ReturnPathMAC(testKey, strings.ToUpper(m.ID), 7, "ACME.test") != mac ||
		ReturnPathMAC(testKey, "0195a1b2c3d47e5f8a9b0c1d2e3f4a5b", 7, m.Domain) != mac {
		t.Error("the MAC depends on case or dashes")
	}
	for name, other := range map[string]string{
		"another index":   ReturnPathMAC(testKey, m.ID, 6, m.Domain),
		"another message": ReturnPathMAC(testKey, "0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c", 7, m.Domain),
		"another domain":  ReturnPathMAC(testKey, m.ID, 7, "acme.example"),
		"another key":     ReturnPathMAC([]byte("fedcba9876543210fedcba9876543210"), m.ID, 7, m.Domain),
	} {
		if other == mac {
			t.Errorf("%s gives the same MAC", name)
		}
	}
	for i := range 100 { // a message has at most 50 recipients
		if local, _, _ := strings.Cut(ReturnPath(testKey, m, i), "@"); len(local) > 64 {
			t.Fatalf("recipient %d: local part of %d octets", i, len(local))
		}
	}
}

// A queue without a return-path key would write forgeable addresses.
func TestNewRequiresReturnPathKey(t *testing.T) {
	o := DefaultOptions()
	if _, err := New(openDB(t), o); err == nil || !strings.Contains(err.Error(), "ReturnPathKey") {
		t.Fatalf("New without a key: %v", err)
	}
}

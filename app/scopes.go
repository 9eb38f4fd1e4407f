package app

import (
	"fmt"
	"slices"
	"strings"
)

// ScopeAll grants every scope.
const ScopeAll = "*"

// The scopes a key can hold. Each use case that acts in an account requires
// exactly one; a :write scope does not include the matching :read.
const (
	ScopeMessagesRead      = "messages:read"
	ScopeMessagesWrite     = "messages:write"
	ScopeEventsRead        = "events:read"
	ScopeDomainsRead       = "domains:read"
	ScopeDomainsWrite      = "domains:write"
	ScopeSuppressionsRead  = "suppressions:read"
	ScopeSuppressionsWrite = "suppressions:write"
	ScopeWebhooksRead      = "webhooks:read"
	ScopeWebhooksWrite     = "webhooks:write"
	ScopeAPIKeysRead       = "api_keys:read"
	ScopeAPIKeysWrite      = "api_keys:write"
	ScopeTeamRead          = "team:read"
	ScopeTeamWrite         = "team:write"
	ScopeAnalyticsRead     = "analytics:read"
	ScopeIPsRead           = "ips:read"
	ScopeAccountRead       = "account:read"
	ScopeTemplatesRead     = "templates:read"
	ScopeTemplatesWrite    = "templates:write"
	ScopeGraderRead        = "grader:read"
	ScopeGraderWrite       = "grader:write"
	ScopeInboundRead       = "inbound:read"
	ScopeInboundWrite      = "inbound:write"
)

// Scopes is every scope a key can hold (besides "*").
var Scopes = []string{
	ScopeMessagesRead, ScopeMessagesWrite, ScopeEventsRead,
	ScopeDomainsRead, ScopeDomainsWrite,
	ScopeSuppressionsRead, ScopeSuppressionsWrite,
	ScopeWebhooksRead, ScopeWebhooksWrite,
	ScopeAPIKeysRead, ScopeAPIKeysWrite,
	ScopeTeamRead, ScopeTeamWrite,
	ScopeAnalyticsRead, ScopeIPsRead, ScopeAccountRead,
	ScopeTemplatesRead, ScopeTemplatesWrite,
	ScopeGraderRead, ScopeGraderWrite,
	ScopeInboundRead, ScopeInboundWrite,
}

// ParseScopes validates and normalises a scope list: known names only, no
// duplicates, "*" alone when present.
func ParseScopes(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("at least one scope is required")
	}
	var out []string
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s != ScopeAll && !slices.Contains(Scopes, s) {
			return nil, fmt.Errorf("unknown scope %q", s)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if slices.Contains(out, ScopeAll) {
		return []string{ScopeAll}, nil
	}
	slices.Sort(out)
	return out, nil
}

// HasScope reports whether held grants want.
func HasScope(held []string, want string) bool {
	return slices.Contains(held, ScopeAll) || slices.Contains(held, want)
}

// CoversScopes reports whether held grants every scope in want; a key may
// only give a new key scopes it holds itself.
func CoversScopes(held, want []string) bool {
	if slices.Contains(held, ScopeAll) {
		return true
	}
	for _, w := range want {
		if w == ScopeAll || !slices.Contains(held, w) {
			return false
		}
	}
	return true
}

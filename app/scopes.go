package app

import (
	"fmt"
	"slices"
	"strings"
)

// ScopeAll grants every scope.
const ScopeAll = "*"

// Scopes is every scope a key can hold (besides "*").
var Scopes = []string{
	"messages:read", "messages:write", "events:read",
	"domains:read", "domains:write",
	"suppressions:read", "suppressions:write",
	"webhooks:read", "webhooks:write",
	"api_keys:read", "api_keys:write",
	"team:read", "team:write",
	"analytics:read", "ips:read", "account:read",
	"templates:read", "templates:write",
	"grader:read", "grader:write",
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

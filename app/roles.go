package app

import "slices"

// RoleScopes is what each team role may do, as API scopes: a dashboard
// session holds its member's role's scopes, so the dashboard meets the same
// checks as an API key (docs/authentication.md has the table).
//
//   - owner: everything ("*"), the team and its ownership included.
//   - admin: every scope but not "*": everything an owner does except
//     granting or revoking owner and admin, which needs "*".
//   - developer: messages, templates, domains, inbound, webhooks, keys,
//     suppressions, and reading the rest; not the team.
//   - viewer: every :read scope.
var RoleScopes = map[string][]string{
	"owner": {ScopeAll},
	"admin": slices.Clone(Scopes),
	"developer": {
		ScopeMessagesRead, ScopeMessagesWrite, ScopeEventsRead,
		ScopeDomainsRead, ScopeDomainsWrite,
		ScopeSuppressionsRead, ScopeSuppressionsWrite,
		ScopeWebhooksRead, ScopeWebhooksWrite,
		ScopeAPIKeysRead, ScopeAPIKeysWrite,
		ScopeTeamRead, ScopeAnalyticsRead, ScopeIPsRead, ScopeAccountRead,
		ScopeTemplatesRead, ScopeTemplatesWrite,
		ScopeGraderRead, ScopeGraderWrite,
		ScopeInboundRead, ScopeInboundWrite,
	},
	"viewer": readScopes(),
}

func readScopes() []string {
	var out []string
	for _, s := range Scopes {
		if len(s) > 5 && s[len(s)-5:] == ":read" {
			out = append(out, s)
		}
	}
	return out
}

// ownershipRoles are the roles only a principal holding "*" (an owner, a
// "*" key, the operator) grants or revokes.
var ownershipRoles = []string{"owner", "admin"}

// mayGrant is nil when p may give or take away role: owner and admin only
// by a principal holding "*" (403 FORBIDDEN otherwise). An admin holds every
// scope but "*", so neither it nor any key it creates can make an owner.
func mayGrant(p Principal, role string) error {
	if slices.Contains(ownershipRoles, role) && !slices.Contains(p.Scopes, ScopeAll) {
		return NewError(CodeForbidden, "only an owner grants or revokes the role "+role)
	}
	return nil
}

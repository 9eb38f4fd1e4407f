package web

import (
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

// The JSON shapes of the API's resources. Times are RFC 3339 in UTC; an
// unset time is null.

type limitsView struct {
	RequestsPerSecond int `json:"requests_per_second"`
	BatchSize         int `json:"batch_size"`
	DedicatedIPs      int `json:"dedicated_ips"`
}

type accountView struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Plan      string     `json:"plan"`
	Email     string     `json:"email,omitempty"`
	Limits    limitsView `json:"limits"`
	CreatedAt time.Time  `json:"created_at"`
}

func viewAccount(a storage.Account) accountView {
	l := app.Limits(a)
	return accountView{ID: a.ID, Name: a.Name, Plan: a.Plan, Email: a.Email, CreatedAt: a.CreatedAt.UTC(),
		Limits: limitsView{RequestsPerSecond: l.RateLimit, BatchSize: l.BatchSize, DedicatedIPs: l.DedicatedIPs}}
}

type keyView struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Mode       string     `json:"mode"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	// CreatedBy is who made the key (a person's email, another key's id,
	// "operator"); null when not recorded.
	CreatedBy *string `json:"created_by"`
	// Key is the secret, present only in the answer that created the key.
	Key string `json:"key,omitempty"`
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func viewKey(k storage.APIKey) keyView {
	mode := "live"
	if k.Test {
		mode = "test"
	}
	v := keyView{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Mode: mode, Scopes: k.Scopes,
		CreatedAt: k.CreatedAt.UTC(), LastUsedAt: utc(k.LastUsedAt), ExpiresAt: utc(k.ExpiresAt), RevokedAt: utc(k.RevokedAt)}
	if k.CreatedBy != "" {
		v.CreatedBy = &k.CreatedBy
	}
	return v
}

type suppressionView struct {
	Recipient       string    `json:"recipient"`
	Stream          string    `json:"stream,omitempty"` // absent: all streams
	Reason          string    `json:"reason"`
	SourceMessageID *string   `json:"source_message_id"`
	CreatedAt       time.Time `json:"created_at"`
}

func viewSuppression(s storage.Suppression) suppressionView {
	v := suppressionView{Recipient: s.Recipient, Stream: s.Stream, Reason: s.Reason, CreatedAt: s.CreatedAt.UTC()}
	if s.SourceMessageID != "" {
		v.SourceMessageID = &s.SourceMessageID
	}
	return v
}

type memberView struct {
	ID         string     `json:"id"`
	Email      string     `json:"email"`
	Role       string     `json:"role"`
	Status     string     `json:"status"`
	InvitedAt  time.Time  `json:"invited_at"`
	AcceptedAt *time.Time `json:"accepted_at"`
}

func viewMember(m storage.TeamMember) memberView {
	return memberView{ID: m.ID, Email: m.Email, Role: m.Role, Status: m.Status,
		InvitedAt: m.InvitedAt.UTC(), AcceptedAt: utc(m.AcceptedAt)}
}

// auditView is one entry of the audit log.
type auditView struct {
	ID        string    `json:"id"`
	Actor     string    `json:"actor"`
	ActorKind string    `json:"actor_kind"`
	Action    string    `json:"action"`
	Target    string    `json:"target"`
	Source    string    `json:"source"`
	CreatedAt time.Time `json:"created_at"`
}

func viewAudit(e storage.AuditEntry) auditView {
	return auditView{ID: e.ID, Actor: e.Actor, ActorKind: e.ActorKind, Action: e.Action, Target: e.Target,
		Source: e.Source, CreatedAt: e.At.UTC()}
}

// mapSlice converts records to views, never returning nil.
func mapSlice[T, V any](in []T, f func(T) V) []V {
	out := make([]V, 0, len(in))
	for _, x := range in {
		out = append(out, f(x))
	}
	return out
}

package app

import (
	"io"
	"time"

	"mailbolt/storage"
)

// Admin is what the management commands do: accounts, keys, IPs and the
// backup. LocalAdmin does it on an App over a database this process opened;
// while `serve` runs, the server holds the database and the CLI reaches the
// same calls through its management socket (web.DialAdmin), whose wire
// format is the types below. They are views made for the commands, never
// storage records: a field is shown only when it is written here, and the
// only secret among them is the one a new key shows once.
type Admin interface {
	CreateAccount(in AccountInput) (AccountView, error)
	UpdateAccount(id string, in AccountUpdate) (AccountView, error)
	ListAccounts() ([]AccountView, error)
	CreateKey(accountID string, in KeyInput) (NewKeyView, error)
	ListKeys(accountID string) ([]KeyView, error)
	RevokeKey(keyID string) (KeyView, error)
	// Backup writes a checked copy of the database to the file out and
	// returns its size.
	Backup(out string) (int64, error)
	AddIP(addr, hostname, pool, warmup string) (IPView, error)
	AssignIP(addr, accountID string) (IPView, error) // accountID "" releases
	RemoveIP(addr string) error
	ListIPs() ([]IPStatusView, error)
	ListPools() ([]PoolSummary, error)
	// Notices lists the deprecation announcements and, for each, who was
	// told and when, and the accounts that could not be told.
	Notices() (NoticesView, error)
	// ImportSuppressions adds an account's suppressions, all or nothing
	// (POST /v1/suppressions/import as the operator).
	ImportSuppressions(accountID string, rows []SuppressionInput) (ImportResult, error)
	// ExportSuppressions writes an account's suppressions to w as CSV
	// (GET /v1/suppressions/export). Nothing is written when it fails
	// before the first row; a failure after it is returned, and what was
	// written is not the whole list.
	ExportSuppressions(accountID, stream string, w io.Writer) error
	// AddMember adds an active member to an account and returns the
	// one-time link where the person sets a dashboard password.
	AddMember(accountID, email, role string) (MemberLinkView, error)
	// ResetPassword returns a new set-password link for an account's
	// member.
	ResetPassword(accountID, email string) (MemberLinkView, error)
	// RemoveMember takes a member off an account and ends the person's
	// sessions in it; unless keepKeys, it revokes the API keys the person
	// made (App.RemoveMember).
	RemoveMember(accountID, email string, keepKeys bool) (MemberLinkView, error)
}

// MemberLinkView is a team member and, for `team add` and `team
// reset-password`, the one-time link (24 h) where the person sets a
// password.
type MemberLinkView struct {
	AccountID     string     `json:"account_id"`
	Email         string     `json:"email"`
	Role          string     `json:"role"`
	URL           string     `json:"url,omitempty"`
	LinkExpiresAt *time.Time `json:"link_expires_at,omitempty"`
	// RevokedKeys are, for `team remove`, the keys the removal revoked.
	RevokedKeys []KeyRef `json:"revoked_keys,omitempty"`
}

// KeyRef names an API key without its secret's hash: its id, name and
// prefix, as the key list shows them.
type KeyRef struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Prefix string `json:"prefix"`
}

// NoticesView is every deprecation announcement and notice recorded.
type NoticesView struct {
	Announcements []AnnouncementView `json:"announcements"`
	Notices       []NoticeView       `json:"notices"`
}

// AnnouncementView is one (version, sunset) pair and when it was first
// announced; Upgrade when a server already deprecating recorded it late.
type AnnouncementView struct {
	Version     string     `json:"version"`
	Sunset      *time.Time `json:"sunset"`
	AnnouncedAt time.Time  `json:"announced_at"`
	Upgrade     bool       `json:"upgrade"`
}

// NoticeView is the notice of one announcement to one account: sent to
// Recipient as message MessageID, or not sendable for Reason.
type NoticeView struct {
	Version   string     `json:"version"`
	Sunset    *time.Time `json:"sunset"`
	AccountID string     `json:"account_id"`
	Recipient string     `json:"recipient,omitempty"`
	At        time.Time  `json:"at"`
	MessageID string     `json:"message_id,omitempty"`
	Reason    string     `json:"reason,omitempty"`
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func noticesView(list []storage.Announcement, notices []storage.Notice) NoticesView {
	v := NoticesView{Announcements: []AnnouncementView{}, Notices: []NoticeView{}}
	for _, a := range list {
		v.Announcements = append(v.Announcements, AnnouncementView{Version: a.Version, Sunset: optionalTime(a.Sunset),
			AnnouncedAt: a.AnnouncedAt, Upgrade: a.Upgrade})
	}
	for _, n := range notices {
		v.Notices = append(v.Notices, NoticeView{Version: n.Version, Sunset: optionalTime(n.Sunset), AccountID: n.AccountID,
			Recipient: n.Recipient, At: n.At, MessageID: n.MessageID, Reason: n.Reason})
	}
	return v
}

// AccountView is an account with the limits it runs under.
type AccountView struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Plan string `json:"plan"`
	// RateLimit (requests per second per key) and BatchSize are the plan's,
	// or the account's own where it overrides them.
	RateLimit   int       `json:"rate_limit"`
	BatchSize   int       `json:"batch_size"`
	TrackOpens  bool      `json:"track_opens"`
	TrackClicks bool      `json:"track_clicks"`
	Email       string    `json:"email,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

func accountView(a storage.Account) AccountView {
	l := Limits(a)
	return AccountView{ID: a.ID, Name: a.Name, Plan: a.Plan, RateLimit: l.RateLimit, BatchSize: l.BatchSize,
		TrackOpens: a.TrackOpens, TrackClicks: a.TrackClicks, Email: a.Email, CreatedAt: a.CreatedAt}
}

// KeyView is an API key without its secret or the secret's hash.
type KeyView struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"account_id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"` // the secret's first characters, to tell keys apart
	Scopes     []string   `json:"scopes"`
	Test       bool       `json:"test"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func keyView(k storage.APIKey) KeyView {
	return KeyView{ID: k.ID, AccountID: k.AccountID, Name: k.Name, Prefix: k.Prefix, Scopes: k.Scopes, Test: k.Test,
		CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt}
}

// NewKeyView is a key just created, with its secret: shown this once.
type NewKeyView struct {
	Key    KeyView `json:"key"`
	Secret string  `json:"secret"`
}

// IPView is a sending IP address.
type IPView struct {
	Address  string `json:"address"`
	Hostname string `json:"hostname"` // its EHLO name
	Pool     string `json:"pool"`
	Warmup   string `json:"warmup"` // the warm-up schedule
	// AccountID is the account the IP is dedicated to; "" when shared.
	AccountID  string     `json:"account_id"`
	AssignedAt *time.Time `json:"assigned_at"`
	AddedAt    time.Time  `json:"added_at"`
}

func ipView(ip storage.IP) IPView {
	return IPView{Address: ip.Address, Hostname: ip.Hostname, Pool: ip.Pool, Warmup: ip.Warmup,
		AccountID: ip.AccountID, AssignedAt: ip.AssignedAt, AddedAt: ip.AddedAt}
}

// IPStatusView is an IP with where it stands in its warm-up today.
type IPStatusView struct {
	IPView
	WarmupDay  int  `json:"warmup_day"`  // 1 on the day it was added
	WarmupDays int  `json:"warmup_days"` // capped days of its schedule; unlimited after
	DailyCap   *int `json:"daily_cap"`   // today's cap; nil when unlimited
	SentToday  int  `json:"sent_today"`  // messages sent from it today (UTC)
}

func ipStatusView(s IPStatus) IPStatusView {
	return IPStatusView{IPView: ipView(s.IP), WarmupDay: s.WarmupDay, WarmupDays: s.WarmupDays, DailyCap: s.DailyCap,
		SentToday: s.SentToday}
}

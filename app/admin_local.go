package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"syscall"

	"mailbolt/storage"
)

// LocalAdmin does the management commands on App directly: the CLI's when
// no server runs on the data dir, and the server's behind its socket.
type LocalAdmin struct {
	App *App
	// Server is set on the admin a running server serves on its socket:
	// a file it writes for a command (the backup) is then written by the
	// server's process, with its user and its view of the file system
	// (systemd's ReadWritePaths, PrivateTmp), and its errors say so.
	Server bool
}

var _ Admin = LocalAdmin{}

func (l LocalAdmin) CreateAccount(in AccountInput) (AccountView, error) {
	a, err := l.App.CreateAccount(in)
	if err != nil {
		return AccountView{}, err
	}
	return accountView(a), nil
}

// UpdateAccount changes the account's fields that in sets.
func (l LocalAdmin) UpdateAccount(id string, in AccountUpdate) (AccountView, error) {
	a, err := l.App.UpdateAccount(id, in)
	if err != nil {
		return AccountView{}, err
	}
	return accountView(a), nil
}

// ListAccounts lists every account, in id order.
func (l LocalAdmin) ListAccounts() ([]AccountView, error) {
	all := []AccountView{}
	opts := storage.ListOptions{Limit: 500}
	for {
		page, res, _, err := l.App.ListAccounts(opts)
		if err != nil {
			return nil, err
		}
		for _, a := range page {
			all = append(all, accountView(a))
		}
		if !res.HasMore {
			return all, nil
		}
		opts.After = res.Next
	}
}

// CreateKey creates a key in the account as its operator, who may grant
// any scope and any expiry.
func (l LocalAdmin) CreateKey(accountID string, in KeyInput) (NewKeyView, error) {
	p, err := l.App.OperatorIn(accountID)
	if err != nil {
		return NewKeyView{}, err
	}
	k, err := l.App.CreateKey(p, in)
	if err != nil {
		return NewKeyView{}, err
	}
	return NewKeyView{Key: keyView(k.Key), Secret: k.Secret}, nil
}

// ListKeys lists every key of an account, revoked ones included; an
// unknown account is NOT_FOUND.
func (l LocalAdmin) ListKeys(accountID string) ([]KeyView, error) {
	p, err := l.App.OperatorIn(accountID)
	if err != nil {
		return nil, err
	}
	all := []KeyView{}
	opts := storage.ListOptions{Limit: 500}
	for {
		page, res, _, err := l.App.ListKeys(p, opts)
		if err != nil {
			return nil, err
		}
		for _, k := range page {
			all = append(all, keyView(k))
		}
		if !res.HasMore {
			return all, nil
		}
		opts.After = res.Next
	}
}

// RevokeKey revokes any key: the operator is not bound by a key's scopes.
func (l LocalAdmin) RevokeKey(keyID string) (KeyView, error) {
	k, err := l.App.RevokeKey(Operator(), keyID)
	if err != nil {
		return KeyView{}, err
	}
	return keyView(k), nil
}

// Backup checks where the copy goes before writing it, so that a
// directory that is missing (or is a file), the live database itself or
// the secret key file is named in a validation error, not reported as an
// internal failure of the backup; so is a directory the process cannot
// write to.
func (l LocalAdmin) Backup(out string) (int64, error) {
	if out == "" {
		return 0, Validation("out", "a file to write the backup to is required")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return 0, Validation("out", err.Error())
	}
	dir := filepath.Dir(abs)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, Validation("out", fmt.Sprintf("the directory %s does not exist", dir))
	case err != nil:
		return 0, Validation("out", fmt.Sprintf("the directory %s cannot be used: %v", dir, err))
	case !fi.IsDir():
		return 0, Validation("out", fmt.Sprintf("%s is not a directory", dir))
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return 0, Validation("out", fmt.Sprintf("%s is a directory: name the file to write", abs))
	}
	n, err := l.App.DB().Backup(abs)
	var protected *storage.ProtectedFileError
	if errors.As(err, &protected) {
		return 0, Validation("out", fmt.Sprintf("%s is %s: write the backup to another file", abs, protected.What))
	}
	if why, ok := l.cannotWrite(abs, err); ok {
		return 0, Validation("out", why)
	}
	return n, err
}

// cannotWrite says why the file dest could not be written, when err is a
// permission error or a read-only file system on dest or its directory.
// Through the socket it is the server's process that writes, whose user
// and mounts are not the command's.
func (l LocalAdmin) cannotWrite(dest string, err error) (string, bool) {
	var pe *fs.PathError
	dir := filepath.Dir(dest)
	if !errors.As(err, &pe) || pe.Path != dest && pe.Path != dir ||
		!errors.Is(pe.Err, fs.ErrPermission) && !errors.Is(pe.Err, syscall.EROFS) {
		return "", false
	}
	if !l.Server {
		return fmt.Sprintf("cannot write to the directory %s (%v)", dir, pe.Err), true
	}
	who := fmt.Sprintf("uid %d", os.Geteuid())
	if u, uerr := user.Current(); uerr == nil {
		who = "user " + u.Username
	}
	return fmt.Sprintf("the server process (%s) writes the backup, and it cannot write to the directory %s (%v): "+
		"choose a directory the server can write to (under systemd, one in the unit's ReadWritePaths)", who, dir, pe.Err), true
}

func (l LocalAdmin) AddIP(addr, hostname, pool, warmup string) (IPView, error) {
	ip, err := l.App.AddIP(addr, hostname, pool, warmup)
	if err != nil {
		return IPView{}, err
	}
	return ipView(ip), nil
}

func (l LocalAdmin) AssignIP(addr, accountID string) (IPView, error) {
	ip, err := l.App.AssignIP(addr, accountID)
	if err != nil {
		return IPView{}, err
	}
	return ipView(ip), nil
}

func (l LocalAdmin) RemoveIP(addr string) error { return l.App.RemoveIP(addr) }

func (l LocalAdmin) ListIPs() ([]IPStatusView, error) {
	ips, err := l.App.ListIPs()
	if err != nil {
		return nil, err
	}
	out := make([]IPStatusView, 0, len(ips))
	for _, s := range ips {
		out = append(out, ipStatusView(s))
	}
	return out, nil
}

func (l LocalAdmin) ListPools() ([]PoolSummary, error) { return l.App.ListPools() }

// Notices lists the deprecation announcements and their notices.
func (l LocalAdmin) Notices() (NoticesView, error) {
	list, notices, err := l.App.DeprecationRecords()
	if err != nil {
		return NoticesView{}, err
	}
	return noticesView(list, notices), nil
}

// ImportSuppressions imports into the account as its operator.
func (l LocalAdmin) ImportSuppressions(accountID string, rows []SuppressionInput) (ImportResult, error) {
	p, err := l.App.OperatorIn(accountID)
	if err != nil {
		return ImportResult{}, err
	}
	return l.App.ImportSuppressions(p, rows)
}

// ExportSuppressions exports the account's suppressions as its operator.
func (l LocalAdmin) ExportSuppressions(accountID, stream string, w io.Writer) error {
	p, err := l.App.OperatorIn(accountID)
	if err != nil {
		return err
	}
	return l.App.ExportSuppressions(p, stream, NewSuppressionCSVWriter(w).Write)
}

// AddMember adds an active member as the operator (any role).
func (l LocalAdmin) AddMember(accountID, email, role string) (MemberLinkView, error) {
	p, err := l.App.OperatorIn(accountID)
	if err != nil {
		return MemberLinkView{}, err
	}
	m, link, err := l.App.AddMember(p, email, role)
	if err != nil {
		return MemberLinkView{}, err
	}
	return MemberLinkView{AccountID: accountID, Email: m.Email, Role: m.Role, URL: link.URL, LinkExpiresAt: &link.ExpiresAt}, nil
}

// ResetPassword makes a new set-password link as the operator.
func (l LocalAdmin) ResetPassword(accountID, email string) (MemberLinkView, error) {
	p, err := l.App.OperatorIn(accountID)
	if err != nil {
		return MemberLinkView{}, err
	}
	m, err := l.App.MemberByEmail(p, email)
	if err != nil {
		return MemberLinkView{}, err
	}
	link, err := l.App.ResetPassword(p, email)
	if err != nil {
		return MemberLinkView{}, err
	}
	return MemberLinkView{AccountID: accountID, Email: m.Email, Role: m.Role, URL: link.URL, LinkExpiresAt: &link.ExpiresAt}, nil
}

// RemoveMember removes a member as the operator (the last owner stays)
// and, unless keepKeys, revokes the keys the person made.
func (l LocalAdmin) RemoveMember(accountID, email string, keepKeys bool) (MemberLinkView, error) {
	p, err := l.App.OperatorIn(accountID)
	if err != nil {
		return MemberLinkView{}, err
	}
	m, err := l.App.MemberByEmail(p, email)
	if err != nil {
		return MemberLinkView{}, err
	}
	r, err := l.App.RemoveMember(p, m.ID, keepKeys)
	if err != nil {
		return MemberLinkView{}, err
	}
	v := MemberLinkView{AccountID: accountID, Email: r.Member.Email, Role: r.Member.Role}
	for _, k := range r.RevokedKeys {
		v.RevokedKeys = append(v.RevokedKeys, KeyRef{ID: k.ID, Name: k.Name, Prefix: k.Prefix})
	}
	return v, nil
}

package app

import (
	"fmt"
	"io"
	"path/filepath"
	"unicode/utf8"
)

// TextAdmin is the Admin a management command calls: it refuses a value
// that is not UTF-8 before the Admin it wraps sees it, naming the value as
// the management socket's JSON names it ("name", "scopes[1]",
// "rows[2].recipient", "out"), so that a command answers the same whether
// a server runs or not. Through the socket such a value cannot pass: JSON
// is text, and encoding/json would send U+FFFD in place of its bytes (the
// socket's client refuses it for that, with the same words). On a database
// the command opened itself (LocalAdmin), it would be stored with U+FFFD.
//
// A value passed only to look a record up outside a JSON body (the
// account of `keys list`, the key of `keys revoke`, the account and stream
// of an export) is not checked here, on either path: one that is not UTF-8
// finds nothing, or is refused by the use case.
type TextAdmin struct{ Admin Admin }

// It has a method of its own for each of Admin's, not an embedded Admin:
// a method added to Admin is a compile error here until it says what it
// checks.
var _ Admin = TextAdmin{}

// notText returns the validation error for the first of fields, a list of
// name and value pairs, whose value is not UTF-8; nil when every one is.
func notText(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if !utf8.ValidString(fields[i+1]) {
			return Validation(fields[i], ReasonNotUTF8)
		}
	}
	return nil
}

// listText is notText for the items of a list, named field[i].
func listText(field string, list []string) error {
	for i, v := range list {
		if err := notText(fmt.Sprintf("%s[%d]", field, i), v); err != nil {
			return err
		}
	}
	return nil
}

func (t TextAdmin) CreateAccount(in AccountInput) (AccountView, error) {
	if err := notText("name", in.Name, "plan", in.Plan, "email", in.Email); err != nil {
		return AccountView{}, err
	}
	return t.Admin.CreateAccount(in)
}

func (t TextAdmin) UpdateAccount(id string, in AccountUpdate) (AccountView, error) {
	if err := notText("name", derefStr(in.Name), "plan", derefStr(in.Plan), "email", derefStr(in.Email)); err != nil {
		return AccountView{}, err
	}
	return t.Admin.UpdateAccount(id, in)
}

func (t TextAdmin) ListAccounts() ([]AccountView, error) { return t.Admin.ListAccounts() }

func (t TextAdmin) CreateKey(accountID string, in KeyInput) (NewKeyView, error) {
	err := notText("account_id", accountID, "name", in.Name)
	if err == nil {
		err = listText("scopes", in.Scopes)
	}
	if err != nil {
		return NewKeyView{}, err
	}
	return t.Admin.CreateKey(accountID, in)
}

func (t TextAdmin) ListKeys(accountID string) ([]KeyView, error) { return t.Admin.ListKeys(accountID) }

func (t TextAdmin) RevokeKey(keyID string) (KeyView, error) { return t.Admin.RevokeKey(keyID) }

// Backup checks the file's absolute path, which is what the socket carries
// and what a command without a server writes: the working directory's
// path is part of it.
func (t TextAdmin) Backup(out string) (int64, error) {
	path := out
	if abs, err := filepath.Abs(out); err == nil {
		path = abs
	}
	if err := notText("out", out, "out", path); err != nil {
		return 0, err
	}
	return t.Admin.Backup(out)
}

func (t TextAdmin) AddIP(addr, hostname, pool, warmup string) (IPView, error) {
	if err := notText("address", addr, "hostname", hostname, "pool", pool, "warmup", warmup); err != nil {
		return IPView{}, err
	}
	return t.Admin.AddIP(addr, hostname, pool, warmup)
}

func (t TextAdmin) AssignIP(addr, accountID string) (IPView, error) {
	if err := notText("address", addr, "account_id", accountID); err != nil {
		return IPView{}, err
	}
	return t.Admin.AssignIP(addr, accountID)
}

func (t TextAdmin) RemoveIP(addr string) error {
	if err := notText("address", addr); err != nil {
		return err
	}
	return t.Admin.RemoveIP(addr)
}

func (t TextAdmin) ListIPs() ([]IPStatusView, error) { return t.Admin.ListIPs() }

func (t TextAdmin) ListPools() ([]PoolSummary, error) { return t.Admin.ListPools() }

func (t TextAdmin) Notices() (NoticesView, error) { return t.Admin.Notices() }

// ImportSuppressions names a row by its index, as the socket's JSON does;
// rows read from a CSV file were checked with their lines there
// (ReadSuppressionsCSV).
func (t TextAdmin) ImportSuppressions(accountID string, rows []SuppressionInput) (ImportResult, error) {
	err := notText("account_id", accountID)
	for i, r := range rows {
		if err != nil {
			break
		}
		at := fmt.Sprintf("rows[%d].", i)
		err = notText(at+"recipient", r.Recipient, at+"reason", r.Reason, at+"stream", r.Stream)
	}
	if err != nil {
		return ImportResult{}, err
	}
	return t.Admin.ImportSuppressions(accountID, rows)
}

func (t TextAdmin) ExportSuppressions(accountID, stream string, w io.Writer) error {
	return t.Admin.ExportSuppressions(accountID, stream, w)
}

func (t TextAdmin) AddMember(accountID, email, role string) (MemberLinkView, error) {
	if err := notText("account_id", accountID, "email", email, "role", role); err != nil {
		return MemberLinkView{}, err
	}
	return t.Admin.AddMember(accountID, email, role)
}

func (t TextAdmin) ResetPassword(accountID, email string) (MemberLinkView, error) {
	if err := notText("account_id", accountID, "email", email); err != nil {
		return MemberLinkView{}, err
	}
	return t.Admin.ResetPassword(accountID, email)
}

func (t TextAdmin) RemoveMember(accountID, email string, keepKeys bool) (MemberLinkView, error) {
	if err := notText("account_id", accountID, "email", email); err != nil {
		return MemberLinkView{}, err
	}
	return t.Admin.RemoveMember(accountID, email, keepKeys)
}

package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"mailbolt/app"
)

// AdminClient does the management commands through a running server's
// socket.
type AdminClient struct {
	http *http.Client
}

var _ app.Admin = (*AdminClient)(nil)

// DialAdmin connects to the socket in dataDir. It fails when no server is
// listening there, in which case the caller opens the database itself.
func DialAdmin(dataDir string) (*AdminClient, error) {
	path := filepath.Join(dataDir, SocketName)
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, err
	}
	c.Close()
	return &AdminClient{http: &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}}, nil
}

func (c *AdminClient) do(method, path string, in, out any) error {
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			return err
		}
		// The socket carries JSON, which is text: a value that is not
		// UTF-8 would arrive with U+FFFD in place of its bytes. It is
		// refused here as the server refuses one that reaches it. The
		// CLI's calls meet app.TextAdmin first, which refuses it in the
		// same words on this path and on a database the CLI opened.
		if off := replacedByte(body.Bytes()); off >= 0 {
			return textPathError(body.Bytes(), off, false)
		}
	}
	req, err := http.NewRequest(method, "http://mailbolt"+path, &body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("management socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errorOf(resp)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// replacedByte returns the offset in data, a JSON text encoding/json
// wrote, of the first \ufffd escape, or -1. The encoder writes each byte
// of a string that is not UTF-8 as that escape, and a real U+FFFD as it
// is, so the escape marks a byte it replaced. "\\ufffd" is a backslash
// and text, no escape.
func replacedByte(data []byte) int {
	for i := 0; ; {
		j := bytes.Index(data[i:], replacement)
		if j < 0 {
			return -1
		}
		if i += j; startsEscape(data, i) {
			return i
		}
		i += len(replacement)
	}
}

var replacement = []byte(`\ufffd`)

// errorOf is the error a non-200 answer of the socket carries.
func errorOf(resp *http.Response) error {
	var env envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("management socket: status %d", resp.StatusCode)
	}
	return &app.Error{Code: env.Error.Code, Message: env.Error.Message, Details: env.Error.Details}
}

func (c *AdminClient) CreateAccount(in app.AccountInput) (a app.AccountView, err error) {
	err = c.do("POST", "/accounts", in, &a)
	return a, err
}

func (c *AdminClient) UpdateAccount(id string, in app.AccountUpdate) (a app.AccountView, err error) {
	err = c.do("PATCH", "/accounts/"+url.PathEscape(id), in, &a)
	return a, err
}

func (c *AdminClient) ListAccounts() (list []app.AccountView, err error) {
	err = c.do("GET", "/accounts", nil, &list)
	return list, err
}

func (c *AdminClient) CreateKey(accountID string, in app.KeyInput) (k app.NewKeyView, err error) {
	err = c.do("POST", "/keys", adminCreateKey{AccountID: accountID, Name: in.Name, Scopes: in.Scopes, Test: in.Mode == app.ModeTest, ExpiresAt: in.ExpiresAt}, &k)
	return k, err
}

func (c *AdminClient) ListKeys(accountID string) (list []app.KeyView, err error) {
	err = c.do("GET", "/keys?account="+url.QueryEscape(accountID), nil, &list)
	return list, err
}

func (c *AdminClient) RevokeKey(keyID string) (k app.KeyView, err error) {
	err = c.do("POST", "/keys/"+url.PathEscape(keyID)+"/revoke", nil, &k)
	return k, err
}

// Backup asks the server to write the backup; out is made absolute first
// because the server's working directory is not the caller's.
func (c *AdminClient) Backup(out string) (int64, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return 0, err
	}
	var res map[string]int64
	err = c.do("POST", "/backup", map[string]string{"out": abs}, &res)
	return res["bytes"], err
}

func (c *AdminClient) AddIP(addr, hostname, pool, warmup string) (ip app.IPView, err error) {
	err = c.do("POST", "/ips", adminIP{Address: addr, Hostname: hostname, Pool: pool, Warmup: warmup}, &ip)
	return ip, err
}

func (c *AdminClient) AssignIP(addr, accountID string) (ip app.IPView, err error) {
	err = c.do("POST", "/ips/assign", adminIP{Address: addr, AccountID: accountID}, &ip)
	return ip, err
}

func (c *AdminClient) RemoveIP(addr string) error {
	var res map[string]string
	return c.do("POST", "/ips/remove", adminIP{Address: addr}, &res)
}

func (c *AdminClient) ListIPs() (list []app.IPStatusView, err error) {
	err = c.do("GET", "/ips", nil, &list)
	return list, err
}

func (c *AdminClient) ListPools() (list []app.PoolSummary, err error) {
	err = c.do("GET", "/pools", nil, &list)
	return list, err
}

func (c *AdminClient) Notices() (v app.NoticesView, err error) {
	err = c.do("GET", "/notices", nil, &v)
	return v, err
}

func (c *AdminClient) ImportSuppressions(accountID string, rows []app.SuppressionInput) (res app.ImportResult, err error) {
	err = c.do("POST", "/suppressions/import", adminImport{AccountID: accountID, Rows: rows}, &res)
	return res, err
}

// ExportSuppressions copies the server's streamed CSV to w; a transfer the
// server broke off is an error.
func (c *AdminClient) ExportSuppressions(accountID, stream string, w io.Writer) error {
	q := url.Values{"account": {accountID}, "stream": {stream}}
	resp, err := c.http.Get("http://mailbolt/suppressions/export?" + q.Encode())
	if err != nil {
		return fmt.Errorf("management socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errorOf(resp)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("management socket: the export broke off: %w", err)
	}
	return nil
}

func (c *AdminClient) AddMember(accountID, email, role string) (v app.MemberLinkView, err error) {
	err = c.do("POST", "/team/add", adminMember{AccountID: accountID, Email: email, Role: role}, &v)
	return v, err
}

func (c *AdminClient) ResetPassword(accountID, email string) (v app.MemberLinkView, err error) {
	err = c.do("POST", "/team/reset-password", adminMember{AccountID: accountID, Email: email}, &v)
	return v, err
}

func (c *AdminClient) RemoveMember(accountID, email string, keepKeys bool) (v app.MemberLinkView, err error) {
	err = c.do("POST", "/team/remove", adminMember{AccountID: accountID, Email: email, KeepKeys: keepKeys}, &v)
	return v, err
}

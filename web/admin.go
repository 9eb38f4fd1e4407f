package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

// SocketName is the management socket's file name inside the data dir.
const SocketName = "mailbolt.sock"

// maxSocketPath is the longest unix socket path Linux accepts (sun_path
// holds 108 bytes including the terminating NUL).
const maxSocketPath = 107

// ErrSocketPathTooLong means the data dir is too deep for a unix socket.
var ErrSocketPathTooLong = errors.New("management socket path too long")

// Admin is what the management CLI does. LocalAdmin does it on a database
// the CLI opened itself; DialAdmin does it through the socket of a running
// server, which holds the database lock.
type Admin interface {
	CreateAccount(in app.AccountInput) (storage.Account, error)
	ListAccounts() ([]storage.Account, error)
	CreateKey(accountID string, in app.KeyInput) (app.CreatedKey, error)
	ListKeys(accountID string) ([]storage.APIKey, error)
	RevokeKey(keyID string) (storage.APIKey, error)
	Backup(out string) (int64, error)
	AddIP(addr, hostname, pool, warmup string) (storage.IP, error)
	AssignIP(addr, accountID string) (storage.IP, error) // accountID "" releases
	RemoveIP(addr string) error
	ListIPs() ([]app.IPStatus, error)
	ListPools() ([]app.PoolSummary, error)
}

// LocalAdmin runs management commands directly on an App, as its operator
// (app.Operator, or app.OperatorIn the account a command names).
type LocalAdmin struct{ App *app.App }

func (l LocalAdmin) CreateAccount(in app.AccountInput) (storage.Account, error) {
	a, e := l.App.CreateAccount(in)
	return a, e
}

func (l LocalAdmin) ListAccounts() ([]storage.Account, error) {
	var all []storage.Account
	opts := storage.ListOptions{Limit: 500}
	for {
		page, res, _, e := l.App.ListAccounts(opts)
		if e != nil {
			return nil, e
		}
		all = append(all, page...)
		if !res.HasMore {
			return all, nil
		}
		opts.After = res.Next
	}
}

func (l LocalAdmin) CreateKey(accountID string, in app.KeyInput) (app.CreatedKey, error) {
	p, e := l.App.OperatorIn(accountID)
	if e != nil {
		return app.CreatedKey{}, e
	}
	return l.App.CreateKey(p, in)
}

func (l LocalAdmin) ListKeys(accountID string) ([]storage.APIKey, error) {
	p, e := l.App.OperatorIn(accountID)
	if e != nil {
		return nil, e
	}
	var all []storage.APIKey
	opts := storage.ListOptions{Limit: 500}
	for {
		page, res, _, e := l.App.ListKeys(p, opts)
		if e != nil {
			return nil, e
		}
		all = append(all, page...)
		if !res.HasMore {
			return all, nil
		}
		opts.After = res.Next
	}
}

func (l LocalAdmin) RevokeKey(keyID string) (storage.APIKey, error) {
	k, e := l.App.RevokeKey(app.Operator(), keyID)
	return k, e
}

func (l LocalAdmin) Backup(out string) (int64, error) { return l.App.DB().Backup(out) }

func (l LocalAdmin) AddIP(addr, hostname, pool, warmup string) (storage.IP, error) {
	ip, e := l.App.AddIP(addr, hostname, pool, warmup)
	return ip, e
}

func (l LocalAdmin) AssignIP(addr, accountID string) (storage.IP, error) {
	ip, e := l.App.AssignIP(addr, accountID)
	return ip, e
}

func (l LocalAdmin) RemoveIP(addr string) error { return l.App.RemoveIP(addr) }

func (l LocalAdmin) ListIPs() ([]app.IPStatus, error) {
	ips, e := l.App.ListIPs()
	return ips, e
}

func (l LocalAdmin) ListPools() ([]app.PoolSummary, error) {
	pools, e := l.App.ListPools()
	return pools, e
}

// AdminServer serves Admin over a unix socket of mode 0600 in the data dir.
type AdminServer struct {
	srv  *http.Server
	ln   net.Listener
	path string
}

// ListenAdmin opens the management socket. A stale socket left by a crashed
// server is replaced; a live one means another server owns the data dir.
func ListenAdmin(dataDir string, admin Admin) (*AdminServer, error) {
	path := filepath.Join(dataDir, SocketName)
	if abs, err := filepath.Abs(path); err == nil && len(abs) > maxSocketPath {
		return nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrSocketPathTooLong, abs, len(abs), maxSocketPath)
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("another mailbolt server is listening on %s", path)
	}
	_ = os.Remove(path)
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("management socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	s := &AdminServer{ln: ln, path: path, srv: &http.Server{Handler: adminHandler(admin), ReadHeaderTimeout: 10 * time.Second}}
	go s.srv.Serve(ln)
	return s, nil
}

// Shutdown stops the socket and removes its file.
func (s *AdminServer) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	os.Remove(s.path)
	return err
}

type adminCreateKey struct {
	AccountID string     `json:"account_id"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	Test      bool       `json:"test"`
	ExpiresAt *time.Time `json:"expires_at"`
}

type adminIP struct {
	Address   string `json:"address"`
	Hostname  string `json:"hostname"`
	Pool      string `json:"pool"`
	Warmup    string `json:"warmup"`
	AccountID string `json:"account_id"`
}

func adminHandler(admin Admin) http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any, err error) {
		if err != nil {
			var e *app.Error
			if !errors.As(err, &e) {
				e = app.Internal(err)
				e.Message = err.Error()
			}
			writeJSON(w, e.Status(), envelope{Error: envelopeError{Code: e.Code, Message: e.Message, Details: e.Details}})
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool {
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(v); err != nil {
			reply(w, nil, app.Validation("body", err.Error()))
			return false
		}
		return true
	}
	mux.HandleFunc("GET /accounts", func(w http.ResponseWriter, r *http.Request) {
		v, err := admin.ListAccounts()
		reply(w, v, err)
	})
	mux.HandleFunc("POST /accounts", func(w http.ResponseWriter, r *http.Request) {
		var in app.AccountInput
		if decode(w, r, &in) {
			v, err := admin.CreateAccount(in)
			reply(w, v, err)
		}
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		keys, err := admin.ListKeys(r.URL.Query().Get("account"))
		for i := range keys {
			keys[i].Hash = nil
		}
		reply(w, keys, err)
	})
	mux.HandleFunc("POST /keys", func(w http.ResponseWriter, r *http.Request) {
		var in adminCreateKey
		if decode(w, r, &in) {
			mode := app.ModeLive
			if in.Test {
				mode = app.ModeTest
			}
			k, err := admin.CreateKey(in.AccountID, app.KeyInput{Name: in.Name, Scopes: in.Scopes, Mode: mode, ExpiresAt: in.ExpiresAt})
			k.Key.Hash = nil
			reply(w, k, err)
		}
	})
	mux.HandleFunc("POST /keys/{id}/revoke", func(w http.ResponseWriter, r *http.Request) {
		k, err := admin.RevokeKey(r.PathValue("id"))
		k.Hash = nil
		reply(w, k, err)
	})
	mux.HandleFunc("GET /ips", func(w http.ResponseWriter, r *http.Request) {
		v, err := admin.ListIPs()
		reply(w, v, err)
	})
	mux.HandleFunc("POST /ips", func(w http.ResponseWriter, r *http.Request) {
		var in adminIP
		if decode(w, r, &in) {
			v, err := admin.AddIP(in.Address, in.Hostname, in.Pool, in.Warmup)
			reply(w, v, err)
		}
	})
	mux.HandleFunc("POST /ips/assign", func(w http.ResponseWriter, r *http.Request) {
		var in adminIP
		if decode(w, r, &in) {
			v, err := admin.AssignIP(in.Address, in.AccountID)
			reply(w, v, err)
		}
	})
	mux.HandleFunc("POST /ips/remove", func(w http.ResponseWriter, r *http.Request) {
		var in adminIP
		if decode(w, r, &in) {
			reply(w, map[string]string{"address": in.Address}, admin.RemoveIP(in.Address))
		}
	})
	mux.HandleFunc("GET /pools", func(w http.ResponseWriter, r *http.Request) {
		v, err := admin.ListPools()
		reply(w, v, err)
	})
	mux.HandleFunc("POST /backup", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Out string `json:"out"`
		}
		if decode(w, r, &in) {
			n, err := admin.Backup(in.Out)
			reply(w, map[string]int64{"bytes": n}, err)
		}
	})
	return mux
}

package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"mailbolt/app"
)

// SocketName is the management socket's file name inside the data dir.
const SocketName = "mailbolt.sock"

// maxSocketPath is the longest unix socket path Linux accepts (sun_path
// holds 108 bytes including the terminating NUL).
const maxSocketPath = 107

// ErrSocketPathTooLong means the data dir is too deep for a unix socket.
var ErrSocketPathTooLong = errors.New("management socket path too long")

// AdminServer serves an app.Admin over a unix socket of mode 0600 in the
// data dir, for the management commands run while the server holds the
// database. It speaks JSON, in app's admin views: no storage record goes
// over it.
type AdminServer struct {
	srv  *http.Server
	ln   net.Listener
	path string
}

// ListenAdmin opens the management socket. A stale socket left by a crashed
// server is replaced; a live one means another server owns the data dir.
func ListenAdmin(dataDir string, admin app.Admin) (*AdminServer, error) {
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

// adminImport is an import sent over the socket: the CLI reads the file
// and sends its rows, each with its line.
type adminImport struct {
	AccountID string                 `json:"account_id"`
	Rows      []app.SuppressionInput `json:"rows"`
}

// adminImportMaxBytes caps an import sent over the socket: 10,000 rows of
// the longest addresses are about 3 MB as JSON.
const adminImportMaxBytes = 16 << 20

// flushWriter sends each write of a streamed answer at once, and counts
// what it wrote.
type flushWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	n  int
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.n += n
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

type adminIP struct {
	Address   string `json:"address"`
	Hostname  string `json:"hostname"`
	Pool      string `json:"pool"`
	Warmup    string `json:"warmup"`
	AccountID string `json:"account_id"`
}

// adminMember is the body of the socket's team operations.
type adminMember struct {
	AccountID string `json:"account_id"`
	Email     string `json:"email"`
	Role      string `json:"role,omitempty"`
	// KeepKeys, for remove, keeps the keys the person made.
	KeepKeys bool `json:"keep_keys,omitempty"`
}

func adminHandler(admin app.Admin) http.Handler {
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
	// decodeMax reads a body of at most limit bytes into v. The body must
	// be text, as the API's (checkText): invalid UTF-8 or a lone surrogate
	// escape is refused naming the field, where encoding/json would store
	// U+FFFD in its place.
	decodeMax := func(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err == nil {
			if off, lone := checkText(data); off >= 0 {
				reply(w, nil, textError(data, off, lone, v))
				return false
			}
			err = json.NewDecoder(bytes.NewReader(data)).Decode(v)
		}
		if err != nil {
			reply(w, nil, app.Validation("body", err.Error()))
			return false
		}
		return true
	}
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool { return decodeMax(w, r, v, 1<<20) }
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
	mux.HandleFunc("PATCH /accounts/{id}", func(w http.ResponseWriter, r *http.Request) {
		var in app.AccountUpdate
		if decode(w, r, &in) {
			v, err := admin.UpdateAccount(r.PathValue("id"), in)
			reply(w, v, err)
		}
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		v, err := admin.ListKeys(r.URL.Query().Get("account"))
		reply(w, v, err)
	})
	mux.HandleFunc("POST /keys", func(w http.ResponseWriter, r *http.Request) {
		var in adminCreateKey
		if decode(w, r, &in) {
			mode := app.ModeLive
			if in.Test {
				mode = app.ModeTest
			}
			v, err := admin.CreateKey(in.AccountID, app.KeyInput{Name: in.Name, Scopes: in.Scopes, Mode: mode, ExpiresAt: in.ExpiresAt})
			reply(w, v, err)
		}
	})
	mux.HandleFunc("POST /keys/{id}/revoke", func(w http.ResponseWriter, r *http.Request) {
		v, err := admin.RevokeKey(r.PathValue("id"))
		reply(w, v, err)
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
	mux.HandleFunc("GET /notices", func(w http.ResponseWriter, r *http.Request) {
		v, err := admin.Notices()
		reply(w, v, err)
	})
	mux.HandleFunc("POST /suppressions/import", func(w http.ResponseWriter, r *http.Request) {
		var in adminImport
		if decodeMax(w, r, &in, adminImportMaxBytes) {
			v, err := admin.ImportSuppressions(in.AccountID, in.Rows)
			reply(w, v, err)
		}
	})
	mux.HandleFunc("GET /suppressions/export", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		out := &flushWriter{w: w, rc: http.NewResponseController(w)}
		err := admin.ExportSuppressions(q.Get("account"), q.Get("stream"), out)
		switch {
		case err == nil:
		case out.n == 0:
			reply(w, nil, err)
		default:
			panic(http.ErrAbortHandler) // begun: break it off, never a short list that looks whole
		}
	})
	mux.HandleFunc("POST /team/{op}", func(w http.ResponseWriter, r *http.Request) {
		var in adminMember
		if !decode(w, r, &in) {
			return
		}
		var v app.MemberLinkView
		var err error
		switch r.PathValue("op") {
		case "add":
			v, err = admin.AddMember(in.AccountID, in.Email, in.Role)
		case "reset-password":
			v, err = admin.ResetPassword(in.AccountID, in.Email)
		case "remove":
			v, err = admin.RemoveMember(in.AccountID, in.Email, in.KeepKeys)
		default:
			err = app.NotFound("team operation")
		}
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

package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

func (s *Server) listSuppressions(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.Suppression, storage.ListResult, int, error) {
		return s.app.ListSuppressions(c.Principal, o)
	}, viewSuppression)
}

type addSuppressionRequest struct {
	Recipient string `json:"recipient"`
	Email     string `json:"email"` // alias of recipient, as many ESP APIs name it
	Reason    string `json:"reason"`
	Stream    string `json:"stream"` // empty: all streams
}

// recipient is the address the request names, by either field: email is
// taken for recipient, and giving both is an error unless they name one
// address (sameAddress).
func (req addSuppressionRequest) recipient() (string, error) {
	if req.Email != "" && req.Recipient != "" && !sameAddress(req.Email, req.Recipient) {
		return "", app.Validation("email", "differs from recipient; give one of the two")
	}
	if req.Recipient == "" {
		return req.Email, nil
	}
	return req.Recipient, nil
}

// sameAddress reports whether email and recipient name one address: the
// same normal form (app.NormalizeAddress: any case, either spelling of an
// IDN domain). When either is no address, only the same text but for case
// is one, and AddSuppression then says what is wrong with it.
func sameAddress(email, recipient string) bool {
	a, ea := app.NormalizeAddress("email", email)
	b, eb := app.NormalizeAddress("recipient", recipient)
	if ea != nil || eb != nil {
		return strings.EqualFold(email, recipient)
	}
	return a == b
}

// addSuppression answers 201 for a new suppression and 200 with the stored
// one when the recipient was already suppressed.
func (s *Server) addSuppression(w http.ResponseWriter, r *http.Request, c *call) {
	var req addSuppressionRequest
	if !s.decode(w, r, &req) {
		return
	}
	recipient, e := req.recipient()
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write := answer(c, func(w http.ResponseWriter, added app.AddedSuppression) {
		status := http.StatusOK
		if added.Created {
			status = http.StatusCreated
		}
		writeJSON(w, status, viewSuppression(added.Suppression))
	})
	sup, created, e := s.app.AddSuppression(c.Principal, recipient, req.Reason, req.Stream)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, app.AddedSuppression{Suppression: sup, Created: created})
}

func (s *Server) deleteSuppression(w http.ResponseWriter, r *http.Request, c *call) {
	q, e := queryOf(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write := answer(c, noContent)
	if e := s.app.DeleteSuppression(c.Principal, c.params.ByName("recipient"), q.Get("stream")); e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, struct{}{})
}

// importSuppressionsRequest is the JSON form of an import; each item is
// decoded strictly on its own, so an error names its index.
type importSuppressionsRequest struct {
	Suppressions []json.RawMessage `json:"suppressions"`
}

// isCSV reports whether the request body is CSV: Content-Type text/csv,
// the one request body of the API that is not JSON. A charset other than
// UTF-8 is refused.
func isCSV(r *http.Request) (bool, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return false, nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "text/csv" {
		return false, nil
	}
	if cs := params["charset"]; cs != "" && !strings.EqualFold(cs, "utf-8") {
		return false, app.Validation("Content-Type", "a CSV body must be UTF-8 (charset="+cs+")")
	}
	return true, nil
}

// importSuppressions adds up to app.MaxSuppressionImport suppressions in one
// transaction, all or nothing, from a JSON array or a CSV file.
func (s *Server) importSuppressions(w http.ResponseWriter, r *http.Request, c *call) {
	csvBody, e := isCSV(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	var rows []app.SuppressionInput
	if csvBody {
		data, e := readBody(r, s.cfg.MaxBodyBytes)
		if e == nil {
			rows, e = app.ReadSuppressionsCSV(bytes.NewReader(data))
		}
		if e != nil {
			s.writeError(w, r, e)
			return
		}
	} else if rows, e = s.decodeImport(r); e != nil {
		s.writeError(w, r, e)
		return
	}
	write := answer(c, func(w http.ResponseWriter, res app.ImportResult) { writeJSON(w, http.StatusOK, res) })
	res, e := s.app.ImportSuppressions(c.Principal, rows)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, res)
}

// decodeImport reads the JSON form: every item has the fields of POST
// /v1/suppressions.
func (s *Server) decodeImport(r *http.Request) ([]app.SuppressionInput, error) {
	var req importSuppressionsRequest
	data, e := readBody(r, s.cfg.MaxBodyBytes)
	if e != nil {
		return nil, e
	}
	if e := decodeStrict(data, &req); e != nil {
		return nil, e
	}
	if req.Suppressions == nil {
		return nil, app.Validation("suppressions", "is required: an array of suppressions, or send text/csv")
	}
	rows := make([]app.SuppressionInput, len(req.Suppressions))
	for i, raw := range req.Suppressions {
		var item addSuppressionRequest
		var recipient string
		err := decodeStrict(raw, &item)
		if err == nil {
			recipient, err = item.recipient()
		}
		if err != nil {
			return nil, app.AsError(err).Within(fmt.Sprintf("suppressions[%d].", i)).With("index", i)
		}
		rows[i] = app.SuppressionInput{Recipient: recipient, Reason: item.Reason, Stream: item.Stream}
	}
	return rows, nil
}

// exportSuppressions streams the account's suppressions as CSV, in the
// columns an import takes, a chunk at a time as storage reads them.
func (s *Server) exportSuppressions(w http.ResponseWriter, r *http.Request, c *call) {
	q, e := queryOf(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	var cw *app.SuppressionCSVWriter
	rc := http.NewResponseController(w)
	e = s.app.ExportSuppressions(c.Principal, q.Get("stream"), func(list []storage.Suppression) error {
		// A long list may take longer than the server's write timeout:
		// each chunk gets its own.
		_ = rc.SetWriteDeadline(time.Now().Add(exportWriteTimeout))
		if cw == nil {
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			w.Header().Set("Content-Disposition", `attachment; filename="suppressions.csv"`)
			w.WriteHeader(http.StatusOK)
			cw = app.NewSuppressionCSVWriter(w)
		}
		if err := cw.Write(list); err != nil {
			return err
		}
		return rc.Flush()
	})
	if e == nil {
		return
	}
	if cw == nil {
		s.writeError(w, r, e)
		return
	}
	// The answer has begun: break the connection, so the client sees a
	// failed transfer rather than a list that ends early.
	s.log.Error("suppressions export stopped", "request_id", r.Context().Value(reqIDKey{}), "error", e)
	panic(http.ErrAbortHandler)
}

// exportWriteTimeout is how long writing one chunk of an export may take.
const exportWriteTimeout = time.Minute

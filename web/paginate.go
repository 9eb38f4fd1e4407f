package web

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"mailbolt/app"
	"mailbolt/storage"
)

const (
	defaultLimit = 50
	maxLimit     = 200
)

// pageQuery is a parsed list request. Page mode is chosen when `page` is
// given; otherwise cursor mode.
type pageQuery struct {
	pageMode bool
	page     int
	limit    int
	after    []byte
}

// parsePage reads page, limit and cursor from the query string.
func parsePage(r *http.Request) (pageQuery, error) {
	pq := pageQuery{limit: defaultLimit}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return pq, app.Validation("query", "malformed query string: "+err.Error())
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return pq, app.Validation("limit", fmt.Sprintf("must be an integer from 1 to %d", maxLimit))
		}
		pq.limit = n
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return pq, app.Validation("page", "must be an integer of 1 or more")
		}
		if q.Get("cursor") != "" {
			return pq, app.Validation("cursor", "cannot be combined with page")
		}
		pq.pageMode, pq.page = true, n
		return pq, nil
	}
	if v := q.Get("cursor"); v != "" {
		after, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || len(after) == 0 {
			return pq, app.Validation("cursor", "is not a cursor returned by this list")
		}
		pq.after = after
	}
	return pq, nil
}

// options is the storage request for this page.
func (pq pageQuery) options() storage.ListOptions {
	o := storage.ListOptions{After: pq.after, Limit: pq.limit}
	if pq.pageMode {
		o.Offset = (pq.page - 1) * pq.limit
	}
	return o
}

// pageBody is the page-mode answer.
type pageBody struct {
	Data  any `json:"data"`
	Page  int `json:"page"`
	Limit int `json:"limit"`
	Total int `json:"total"`
}

// cursorBody is the cursor-mode answer; Cursor is absent on the last page.
type cursorBody struct {
	Data    any    `json:"data"`
	Limit   int    `json:"limit"`
	HasMore bool   `json:"has_more"`
	Cursor  string `json:"cursor,omitempty"`
}

// writeList answers a list request in the mode it asked for. data must be a
// non-nil slice so an empty page is [] rather than null.
func writeList(w http.ResponseWriter, r *http.Request, pq pageQuery, data any, res storage.ListResult, total int) {
	if !pq.pageMode {
		body := cursorBody{Data: data, Limit: pq.limit, HasMore: res.HasMore}
		if res.HasMore {
			body.Cursor = base64.RawURLEncoding.EncodeToString(res.Next)
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	last := max(1, (total+pq.limit-1)/pq.limit)
	link := func(page int, rel string) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page))
		q.Set("limit", strconv.Itoa(pq.limit))
		u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		return fmt.Sprintf(`<%s>; rel="%s"`, u.String(), rel)
	}
	links := []string{}
	if pq.page < last {
		links = append(links, link(pq.page+1, "next"))
	}
	if pq.page > 1 {
		links = append(links, link(min(pq.page-1, last), "prev"))
	}
	links = append(links, link(1, "first"), link(last, "last"))
	w.Header().Set("Link", strings.Join(links, ", "))
	writeJSON(w, http.StatusOK, pageBody{Data: data, Page: pq.page, Limit: pq.limit, Total: total})
}

// lister fetches one page of a list for the caller.
type lister[T any] func(storage.ListOptions) ([]T, storage.ListResult, int, error)

// serveList answers a list request: parse the page, fetch it, render each
// record with view, write it in the mode asked for.
func serveList[T, V any](s *Server, w http.ResponseWriter, r *http.Request, list lister[T], view func(T) V) {
	pq, e := parsePage(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	items, res, total, e := list(pq.options())
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeList(w, r, pq, mapSlice(items, view), res, total)
}

// encodeCursor is the text of a list cursor, as the API answers it.
func encodeCursor(next []byte) string { return base64.RawURLEncoding.EncodeToString(next) }

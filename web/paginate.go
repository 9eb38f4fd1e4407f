package web

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
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

// listName names a list for its cursors (app.SealCursor): the type of its
// items, so a cursor one list answered is refused by another.
func listName[T any]() string { return reflect.TypeFor[T]().String() }

// parsePage reads page, limit and cursor from the query string of a
// request for the list named list: a cursor must be one this server
// answered for that list (400 VALIDATION_ERROR naming cursor otherwise).
func (s *Server) parsePage(r *http.Request, list string) (pageQuery, error) {
	pq := pageQuery{limit: defaultLimit}
	q, err := queryOf(r)
	if err != nil {
		return pq, err
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
		after, ok := s.app.OpenCursor(list, v)
		if !ok {
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
		o.Offset = pageOffset(pq.page, pq.limit)
	}
	return o
}

// pageOffset is the number of items before page (from 1) of a list paged
// by limit. Where that number would overflow an int it is math.MaxInt: no
// list holds that many items, so the page is past the end (200 with no
// items), never a wrapped-around offset that lands on page 1 or panics.
func pageOffset(page, limit int) int {
	if page-1 > math.MaxInt/limit {
		return math.MaxInt
	}
	return (page - 1) * limit
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

// writeList answers a request for the list named list in the mode it
// asked for. data must be a non-nil slice so an empty page is [] rather
// than null.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, list string, pq pageQuery, data any, res storage.ListResult, total int) {
	if !pq.pageMode {
		body := cursorBody{Data: data, Limit: pq.limit, HasMore: res.HasMore}
		if res.HasMore {
			body.Cursor = s.cursor(list, res.Next)
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
	name := listName[T]()
	pq, e := s.parsePage(r, name)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	items, res, total, e := list(pq.options())
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	s.writeList(w, r, name, pq, mapSlice(items, view), res, total)
}

// cursor is the text of the cursor that continues the list named list
// after the storage key next, as the API and the dashboard answer it.
func (s *Server) cursor(list string, next []byte) string { return s.app.SealCursor(list, next) }

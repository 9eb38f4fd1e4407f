package mailbolt

import (
	"context"
	"iter"
	"net/url"
	"strconv"
	"strings"
)

// ListParams selects one page of a list. With Page set the list is read in
// page mode (page and limit, a Link header, a total); without it in cursor
// mode (limit and the cursor of the previous page). See docs/pagination.md.
type ListParams struct {
	Limit  int    // items per page, 1 to 200; 0 leaves the server's default (50)
	Page   int    // page number from 1: selects page mode
	Cursor string // cursor of the previous page (cursor mode)
}

func (p *ListParams) values() url.Values {
	q := url.Values{}
	if p == nil {
		return q
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Page > 0 {
		q.Set("page", strconv.Itoa(p.Page))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

// Page is one page of a list, in either mode.
type Page[T any] struct {
	Response `json:"-"`
	Data     []T `json:"data"`
	Limit    int `json:"limit"`
	// Cursor mode: HasMore and the Cursor of the next page ("" on the last page).
	HasMore bool   `json:"has_more"`
	Cursor  string `json:"cursor,omitempty"`
	// Page mode: the page number and the total number of items.
	Page  int `json:"page,omitempty"`
	Total int `json:"total,omitempty"`
	// Links holds the Link header's URLs by rel (next, prev, first, last) in page mode.
	Links map[string]string `json:"-"`
}

// Next reports whether there is a page after this one.
func (p *Page[T]) Next() bool {
	if p.Page > 0 {
		_, ok := p.Links["next"]
		return ok
	}
	return p.HasMore && p.Cursor != ""
}

// parseLinks reads an RFC 8288 Link header: <url>; rel="next", ...
func parseLinks(h string) map[string]string {
	links := map[string]string{}
	for part := range strings.SplitSeq(h, ",") {
		part = strings.TrimSpace(part)
		i, j := strings.Index(part, "<"), strings.Index(part, ">")
		if i != 0 || j < 0 {
			continue
		}
		target := part[1:j]
		for attr := range strings.SplitSeq(part[j+1:], ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(attr), "=")
			if ok && strings.EqualFold(k, "rel") {
				for rel := range strings.FieldsSeq(strings.Trim(v, `"`)) {
					links[rel] = target
				}
			}
		}
	}
	return links
}

func listPage[T any](ctx context.Context, c *Client, path string, q url.Values) (*Page[T], error) {
	p := new(Page[T])
	if _, err := c.do(ctx, call{method: "GET", path: path, query: q}, p, nil); err != nil {
		return nil, err
	}
	p.Links = parseLinks(p.Header.Get("Link"))
	return p, nil
}

// pages walks a list from the page q selects to its end, in the mode q selects.
func pages[T any](ctx context.Context, c *Client, path string, q url.Values) iter.Seq2[*Page[T], error] {
	return func(yield func(*Page[T], error) bool) {
		q := cloneValues(q)
		pageMode := q.Get("page") != ""
		for {
			p, err := listPage[T](ctx, c, path, q)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(p, nil) {
				return
			}
			if pageMode {
				if _, ok := p.Links["next"]; !ok || len(p.Data) == 0 {
					return
				}
				q.Set("page", strconv.Itoa(p.Page+1))
			} else {
				if !p.HasMore || p.Cursor == "" {
					return
				}
				q.Set("cursor", p.Cursor)
			}
		}
	}
}

// items flattens pages into their items.
func items[T any](seq iter.Seq2[*Page[T], error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for p, err := range seq {
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Data {
				if !yield(it, nil) {
					return
				}
			}
		}
	}
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

package web

import (
	"net/http"
	"net/url"

	"mailbolt/app"
)

// queryOf is the query string of r, parsed. Every route that reads its
// query string reads it here: one that cannot be parsed (a bad %-escape,
// a ';' between pairs) is 400 VALIDATION_ERROR naming "query", where
// r.URL.Query() would drop the pairs it cannot read and answer as if they
// had not been sent (the newest template version, the whole export, the
// default window).
func queryOf(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return q, app.Validation("query", "malformed query string: "+err.Error())
	}
	return q, nil
}

package web

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"mailbolt/app"
)

// formText refuses a dashboard form that holds a value that is not UTF-8,
// as the API refuses such a body (checkText): the form's use case would
// store it with U+FFFD in place of its bytes (a domain: the punycode of
// that). A browser sends the form of a UTF-8 page as UTF-8, so such bytes
// come from a script or a page in another charset. The error names the
// first field, in name order, that holds one ("name: must be valid
// UTF-8"), for the form's own error display; its bytes in r.PostForm
// become U+FFFD, so that the form shown again with the error is UTF-8, as
// its page is. Each form that stores what it posts calls it first.
func formText(r *http.Request) error {
	var err error
	for _, k := range slices.Sorted(maps.Keys(r.PostForm)) {
		for i, v := range r.PostForm[k] {
			if invalidUTF8([]byte(v)) < 0 {
				continue
			}
			if err == nil {
				err = app.Validation(strings.ToValidUTF8(k, "\uFFFD"), reasonNotUTF8)
			}
			r.PostForm[k][i] = strings.ToValidUTF8(v, "\uFFFD")
		}
	}
	return err
}

package web

import (
	"net/url"
	"testing"
)

// TestTimeWindowBefore1970: a since or until before 1970 (the epoch of the
// UUIDv7 ids the window is looked up by) counts as 1970's first instant,
// on the message list and the event history: since keeps everything,
// until nothing. Such a time used to wrap around to the far future, so
// since matched nothing and until everything.
func TestTimeWindowBefore1970(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	sandbox := e.newKey(e.acct.ID, []string{"*"}, true, nil)
	for range 2 {
		e.do("POST", "/v1/messages", sandbox, `{"from":"a@acme.test","to":["b@example.com"],"subject":"hi","text":"hello"}`).want(t, 202)
	}
	count := func(list, query string) int {
		t.Helper()
		return len(e.do("GET", list+"?"+query, sandbox, nil).want(t, 200).json(t)["data"].([]any))
	}
	for _, list := range []string{"/v1/messages", "/v1/events"} {
		all := count(list, "")
		if all < 2 {
			t.Fatalf("%s: %d items", list, all)
		}
		for _, c := range []struct {
			query string
			want  int
		}{
			{"since=1700-01-01T00:00:00Z", all},
			{"since=0001-01-01T00:00:00Z", all},
			{"since=1969-12-31T23:59:59.999Z", all},
			{"since=1970-01-01T00:00:00Z", all},
			{"until=1677-01-01T00:00:00Z", 0},
			{"until=1969-12-31T23:59:59.999Z", 0},
			{"until=1970-01-01T00:00:00Z", 0},
			{"since=1700-01-01T00:00:00Z&until=2999-01-01T00:00:00Z", all},
			{"since=1700-01-01T00:00:00Z&until=1800-01-01T00:00:00Z", 0},
			{"since=" + url.QueryEscape("1969-12-31T23:00:00-02:00") + "&page=1", all}, // 1970-01-01T01:00Z
		} {
			if n := count(list, c.query); n != c.want {
				t.Errorf("%s?%s: %d items, want %d", list, c.query, n, c.want)
			}
		}
	}
}

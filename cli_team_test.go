package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var ownerLinkRe = regexp.MustCompile(`(http://\S+/dashboard/password/\S+)`)

// dashboardClient keeps cookies and does not follow redirects.
func dashboardClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// submit GETs the form at page and POSTs form to action with its CSRF
// token, returning the answer's status and Location.
func submit(t *testing.T, c *http.Client, page, action string, form url.Values) (int, string) {
	t.Helper()
	resp, err := c.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("GET %s: %d, no form: %s", page, resp.StatusCode, body)
	}
	form.Set("csrf", string(m[1]))
	resp, err = c.PostForm(action, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// The first start prints a link where the default account's owner gives an
// email and a password, and can then log in; the link works once.
func TestFirstStartPrintsTheOwnersDashboardLink(t *testing.T) {
	base, out, _ := startServe(t, t.TempDir())
	m := ownerLinkRe.FindStringSubmatch(out.String())
	if m == nil || !strings.HasPrefix(m[1], base+"/dashboard/password/") {
		t.Fatalf("no owner link on %s printed:\n%s", base, out)
	}
	c := dashboardClient()
	if code, _ := submit(t, c, m[1], m[1], url.Values{"email": {"Owner@Example.com"}, "password": {"owner's long password"}}); code != 200 {
		t.Fatalf("setting the owner's password: %d", code)
	}
	if resp, _ := c.Get(m[1]); resp.StatusCode != 404 {
		t.Errorf("the owner link a second time: %d", resp.StatusCode)
	}
	if code, to := submit(t, c, base+"/dashboard/login", base+"/dashboard/login",
		url.Values{"email": {"owner@example.com"}, "password": {"owner's long password"}}); code != 303 || to != "/dashboard/" {
		t.Fatalf("the owner's login: %d to %q", code, to)
	}
	resp, err := c.Get(base + "/dashboard/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "default") || !strings.Contains(string(body), "as owner") {
		t.Errorf("the owner's overview: %d %s", resp.StatusCode, body)
	}
}

// team add, reset-password and remove work through the socket while the
// server runs (with links on its public URL) and on the file when it does
// not (with the path alone).
func TestTeamCommands(t *testing.T) {
	dir := t.TempDir()
	base, out, stop := startServe(t, dir)
	key := liveKeyRe.FindStringSubmatch(out.String())[1]
	_, acct := get(t, base+"/v1/account", key)
	id := acct["id"].(string)

	added := mustRun(t, "team", "add", "--data-dir", dir, "--account", id, "--email", "Bea@Example.com", "--role", "viewer")
	link := lastLine(added)
	if !strings.Contains(added, "added bea@example.com") || !strings.HasPrefix(link, base+"/dashboard/password/") {
		t.Fatalf("team add:\n%s", added)
	}
	c := dashboardClient()
	if code, _ := submit(t, c, link, link, url.Values{"password": {"bea's first password"}}); code != 200 {
		t.Fatalf("bea sets her password: %d", code)
	}
	if _, err := run(t, "team", "add", "--data-dir", dir, "--account", id, "--email", "bea@example.com", "--role", "viewer"); err == nil ||
		!strings.Contains(err.Error(), "CONFLICT") {
		t.Errorf("adding bea twice: %v", err)
	}
	if _, err := run(t, "team", "add", "--data-dir", dir, "--account", id, "--email", "x@example.com", "--role", "boss"); err == nil ||
		!strings.Contains(err.Error(), "VALIDATION_ERROR") {
		t.Errorf("an unknown role: %v", err)
	}
	if code, to := submit(t, c, base+"/dashboard/login", base+"/dashboard/login",
		url.Values{"email": {"bea@example.com"}, "password": {"bea's first password"}}); code != 303 || to != "/dashboard/" {
		t.Fatalf("bea logs in: %d %q", code, to)
	}

	reset := lastLine(mustRun(t, "team", "reset-password", "--data-dir", dir, "--account", id, "--email", "bea@example.com"))
	if !strings.HasPrefix(reset, base+"/dashboard/password/") || reset == link {
		t.Fatalf("reset-password printed %q", reset)
	}
	removed := mustRun(t, "team", "remove", "--data-dir", dir, "--account", id, "--email", "bea@example.com")
	if !strings.Contains(removed, "removed bea@example.com (viewer)") {
		t.Errorf("team remove: %s", removed)
	}
	if resp, _ := c.Get(base + "/dashboard/"); resp.StatusCode != 303 || resp.Header.Get("Location") != "/dashboard/login" {
		t.Errorf("bea's session after her removal: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, err := run(t, "team", "reset-password", "--data-dir", dir, "--account", id, "--email", "bea@example.com"); err == nil ||
		!strings.Contains(err.Error(), "NOT_FOUND") {
		t.Errorf("reset-password of a removed member: %v", err)
	}

	// A developer makes keys in the dashboard; removing her revokes them
	// and names each, unless --keep-keys.
	devs := map[string]*http.Client{}
	for _, email := range []string{"dee@example.com", "eli@example.com"} {
		link := lastLine(mustRun(t, "team", "add", "--data-dir", dir, "--account", id, "--email", email, "--role", "developer"))
		c := dashboardClient()
		if code, _ := submit(t, c, link, link, url.Values{"password": {"a developer's password"}}); code != 200 {
			t.Fatalf("%s sets a password: %d", email, code)
		}
		if code, to := submit(t, c, base+"/dashboard/login", base+"/dashboard/login",
			url.Values{"email": {email}, "password": {"a developer's password"}}); code != 303 || to != "/dashboard/" {
			t.Fatalf("%s logs in: %d %q", email, code, to)
		}
		if code, _ := submit(t, c, base+"/dashboard/api-keys", base+"/dashboard/api-keys",
			url.Values{"name": {email + " ci"}, "mode": {"live"}, "scopes": {"messages:write"}}); code != 200 {
			t.Fatalf("%s makes a key: %d", email, code)
		}
		devs[email] = c
	}
	removed = mustRun(t, "team", "remove", "--data-dir", dir, "--account", id, "--email", "dee@example.com")
	if !regexp.MustCompile(`revoked API key \S+ "dee@example.com ci" \(svc_live_\S+\), which dee@example.com made`).MatchString(removed) {
		t.Errorf("team remove of a member with a key:\n%s", removed)
	}
	kept := mustRun(t, "team", "remove", "--data-dir", dir, "--account", id, "--email", "eli@example.com", "--keep-keys")
	if strings.Contains(kept, "revoked") {
		t.Errorf("team remove --keep-keys:\n%s", kept)
	}
	_, list := get(t, base+"/v1/api-keys", key)
	made := 0
	for _, k := range list["data"].([]any) {
		k := k.(map[string]any)
		if by := k["created_by"]; by == "dee@example.com" || by == "eli@example.com" {
			made++
			if revoked, want := k["revoked_at"] != nil, by == "dee@example.com"; revoked != want {
				t.Errorf("key %v: revoked %v, want %v", k["name"], revoked, want)
			}
		}
	}
	if made != 2 {
		t.Errorf("%d keys made by the two developers in the list, want 2", made)
	}
	stop()

	offline := mustRun(t, "team", "add", "--data-dir", dir, "--account", id, "--email", "cy@example.com", "--role", "owner")
	if !strings.HasPrefix(lastLine(offline), "/dashboard/password/") || !strings.Contains(offline, "--public-url") {
		t.Errorf("team add without a server:\n%s", offline)
	}
}

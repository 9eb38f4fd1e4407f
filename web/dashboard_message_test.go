package web

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/mta"
	"mailbolt/mta/dns"
	"mailbolt/mta/smtptest"
)

// deliveringEnv is a dashboard test server that delivers over SMTP to a
// loopback sink, the MX of dest.test, from the verified domain acme.test.
func deliveringEnv(t *testing.T) (*env, *smtptest.Server) {
	t.Helper()
	return newDeliveringEnv(t, dashConfig(nil), smtptest.Options{}, nil)
}

// newDeliveringEnv is a test server with cfg that delivers over SMTP to a
// loopback sink started with sinkOpts, the MX of dest.test, from the
// verified domain acme.test; tune, when not nil, adjusts the app's and
// the SMTP client's options before they are used.
func newDeliveringEnv(t *testing.T, cfg Config, sinkOpts smtptest.Options, tune func(*app.Options, *mta.Options)) (*env, *smtptest.Server) {
	t.Helper()
	sink, err := smtptest.Start("127.0.0.1:0", sinkOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	e := newEnvWith(t, cfg, func(o *app.Options) {
		mo := mta.DefaultOptions()
		mo.Resolver, mo.MXPort, mo.HELO = o.Domains.Resolver.(*dns.Resolver), sink.Port, "mx.mailbolt.test"
		mo.MXGuard.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		mo.CommandTimeout, mo.ConnectTimeout, mo.DataTimeout = 5*time.Second, 5*time.Second, 5*time.Second
		if tune != nil {
			tune(o, &mo)
		}
		d, err := mta.NewDeliverer(mo)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		o.Delivery.Sender = d
	})
	e.zone.MX("dest.test", 10, "mx.dest.test")
	e.zone.A("mx.dest.test", "127.0.0.1")
	e.verifiedDomain("acme.test")
	return e, sink
}

func TestDashboardMessagePage(t *testing.T) {
	e, sink := deliveringEnv(t)
	e.person(e.acct, "vic@example.com", "viewer")
	id := e.do("POST", "/v1/messages", e.key, map[string]any{
		"from": "news@acme.test", "to": []string{"ann@dest.test"}, "cc": []string{"bob@dest.test"},
		"subject": "Hello <b>there</b>", "text": "Hi <script>alert(1)</script>"}).want(t, 202).json(t)["id"].(string)
	e.runWorkers()
	deadline := time.Now().Add(15 * time.Second)
	for len(sink.Messages()) < 2 || e.do("GET", "/v1/messages/"+id, e.key, nil).want(t, 200).json(t)["status"] != "delivered" {
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %d copies at the sink", len(sink.Messages()))
		}
		time.Sleep(20 * time.Millisecond)
	}

	vic := e.browser()
	wantRedirect(t, "login", vic.login("vic@example.com", goodPassword), "/dashboard/")
	list := vic.get("/dashboard/messages")
	if !strings.Contains(list.body, `href="/dashboard/messages/`+id+`"`) {
		t.Fatalf("the list does not link to the message: %s", list.body)
	}
	p := vic.get("/dashboard/messages/" + id)
	wantStatus(t, "the message page", p, 200)
	for _, want := range []string{
		"Hello &lt;b&gt;there&lt;/b&gt;", // the subject, escaped
		"ann@dest.test", "bob@dest.test",
		"<code>mx.dest.test</code>", // each recipient's MX
		"<code>250 ",                // and SMTP reply
		"message.sent", "message.delivered",
		"/dashboard/messages/" + id + "/source?recipient=bob%40dest.test",
		"/dashboard/messages/" + id + "/raw?recipient=ann%40dest.test",
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the message page lacks %q", want)
		}
	}
	if strings.Count(p.body, "<code>mx.dest.test</code>") != 2 || strings.Count(p.body, "<h4>Timeline</h4>") != 2 {
		t.Errorf("not one timeline per recipient: %s", p.body)
	}

	// The source page shows the source escaped; the download is the API's bytes.
	api := e.do("GET", "/v1/messages/"+id+"/raw?recipient=bob@dest.test", e.key, nil).want(t, 200)
	src := vic.get("/dashboard/messages/" + id + "/source?recipient=bob%40dest.test")
	wantStatus(t, "the source page", src, 200)
	if strings.Contains(src.body, "<script>") || !strings.Contains(src.body, "Hi &lt;script&gt;alert(1)&lt;/script&gt;") ||
		!strings.Contains(src.body, "DKIM-Signature:") {
		t.Fatalf("the source is not shown escaped and signed: %s", src.body)
	}
	dl := vic.get("/dashboard/messages/" + id + "/raw?recipient=bob%40dest.test")
	wantStatus(t, "the download", dl, 200)
	if dl.body != string(api.body) || dl.Header.Get("Content-Type") != "message/rfc822" ||
		dl.Header.Get("Content-Disposition") != `attachment; filename="`+id+`.eml"` {
		t.Fatalf("the download is not the API's raw source: %v", dl.Header)
	}
	// With two recipients, the recipient must be named, and be one of them.
	wantStatus(t, "the source without a recipient", vic.get("/dashboard/messages/"+id+"/source"), 400)
	wantStatus(t, "the source for a stranger", vic.get("/dashboard/messages/"+id+"/source?"+url.Values{"recipient": {"carol@dest.test"}}.Encode()), 400)
	wantStatus(t, "an unknown message", vic.get("/dashboard/messages/01900000-0000-7000-8000-000000000000"), 404)

	// Another account's member finds none of it.
	other, _ := e.account("other", "enterprise", 1000)
	e.person(other, "zed@example.com", "owner")
	zed := e.browser()
	wantRedirect(t, "login", zed.login("zed@example.com", goodPassword), "/dashboard/")
	for _, path := range []string{"", "/source?recipient=ann%40dest.test", "/raw?recipient=ann%40dest.test"} {
		wantStatus(t, "another account's message"+path, zed.get("/dashboard/messages/"+id+path), 404)
	}
}

// The message page shows a recipient's last reply once, whether the stored
// text carries its codes or not.
func TestLastReplyShownOnce(t *testing.T) {
	for _, c := range []struct {
		code           int
		enhanced, text string
		want           string
	}{
		{250, "2.0.0", "250 2.0.0 OK: queued", "250 2.0.0 OK: queued"},
		{250, "2.0.0", "OK: queued", "250 2.0.0 OK: queued"},
		{451, "", "try later", "451 try later"},
		{0, "", "connection refused", "connection refused"},
	} {
		if got := lastReply(c.code, c.enhanced, c.text); got != c.want {
			t.Errorf("lastReply(%d, %q, %q) = %q, want %q", c.code, c.enhanced, c.text, got, c.want)
		}
	}
}

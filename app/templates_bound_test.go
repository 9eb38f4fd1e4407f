package app

import (
	"encoding/base64"
	"runtime"
	"strings"
	"testing"
	"time"

	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// defaultLimits are the render limits of DefaultOptions on the system clock.
func defaultLimits() RenderLimits {
	o := DefaultOptions()
	return RenderLimits{MaxBytes: o.MaxMessageSize, Timeout: o.RenderTimeout, MaxSteps: o.RenderSteps, Now: o.Now}
}

// sandboxSender is a sandbox key's principal in a new account: it may send
// without a verified domain, as the probe's sandbox key did.
func sandboxSender(t *testing.T, a *App) Principal {
	t.Helper()
	acct, e := a.CreateAccount(AccountInput{Name: "acme", Plan: "scale"})
	if e != nil {
		t.Fatal(e)
	}
	p := keyIn(acct.ID)
	p.Test = true
	return p
}

func items(n int) []any {
	l := make([]any, n)
	for i := range l {
		l[i] = int64(i)
	}
	return l
}

// nested is a section over list nested depth times around body.
func nested(list string, depth int, body string) string {
	return strings.Repeat("{{#"+list+"}}", depth) + body + strings.Repeat("{{/"+list+"}}", depth)
}

// allocatedBy is how many bytes fn allocated in all.
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func wantRenderRefused(t *testing.T, e error, reason string) {
	t.Helper()
	if e == nil {
		t.Fatalf("accepted; want 422 TEMPLATE_RENDER_FAILED %s", reason)
	}
	ae := AsError(e)
	if ae.Code != CodeTemplateRenderFailed || ae.Status() != 422 || ae.Details["reason"] != reason {
		t.Fatalf("got %v %v; want 422 TEMPLATE_RENDER_FAILED with reason %s", ae, ae.Details, reason)
	}
}

// The probe's attack: a request of about a kilobyte whose nested sections
// repeat a variable n⁴ times. Unbounded, these came to 100 MB and more.
func TestNestedSectionsAreBoundedWhileRendering(t *testing.T) {
	long := strings.Repeat("x", 1000)
	for _, c := range []struct {
		name   string
		html   string
		data   map[string]any
		reason string
	}{
		// 18⁴ × 1,000 bytes = 105 MB: stopped at --max-message-size.
		{"output", nested("a", 4, "{{s}}"), map[string]any{"a": items(18), "s": long}, ReasonOutputTooLarge},
		// 40⁴ repeats of a short text (31 MB): over the step limit, not started.
		{"steps", nested("a", 4, "<b>{{.}}</b>"), map[string]any{"a": items(40)}, ReasonTooComplex},
		// Sections only: no output at all, 40⁶ loops.
		{"silent", nested("a", 6, ""), map[string]any{"a": items(40)}, ReasonTooComplex},
		// The list is found under its name in an enclosing context too.
		{"outer list", "{{#o}}" + nested("a", 4, "{{v}}") + "{{/o}}", map[string]any{"o": map[string]any{"v": "x"}, "a": items(40)}, ReasonTooComplex},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, _ := newTestApp(t)
			p := sandboxSender(t, a)
			var e error
			alloc := allocatedBy(func() {
				_, e = a.SendMessage(p, MessageInput{From: "a@acme.test", To: []string{"x@dest.test"},
					Subject: ptr("s"), HTML: ptr(c.html), TemplateData: c.data})
			})
			wantRenderRefused(t, e, c.reason)
			if AsError(e).Details["part"] != "html" {
				t.Errorf("details %v: want part html", AsError(e).Details)
			}
			// All allocation, not the peak: each variable written is
			// formatted, escaped and copied, and the output grows by
			// doubling. Unbounded, the first case allocated over 500 MB.
			if limit := uint64(10 * DefaultOptions().MaxMessageSize); alloc > limit {
				t.Errorf("allocated %d MB refusing it; want under %d MB", alloc>>20, limit>>20)
			}
			// The render endpoint: the same bound on a stored template.
			tpl, _, e := a.CreateTemplate(p, TemplateInput{Name: ptr("t"), Subject: ptr("s"), HTML: ptr(c.html)})
			if e != nil {
				t.Fatal(e)
			}
			_, e = a.RenderTemplate(p, tpl.ID, 0, c.data)
			wantRenderRefused(t, e, c.reason)
			_, e = a.SendMessage(p, MessageInput{From: "a@acme.test", To: []string{"x@dest.test"},
				TemplateID: tpl.ID, TemplateData: c.data})
			wantRenderRefused(t, e, c.reason)
		})
	}
}

// The output bound is for the whole message: subject, html and text
// together, and an override of a part is counted in the built message.
func TestRenderOutputLimitCountsEveryPart(t *testing.T) {
	lim := defaultLimits()
	lim.MaxBytes = 1000
	v := storage.TemplateVersion{Subject: "s", HTML: "{{h}}", Text: "{{t}}", Strict: true}
	data := map[string]any{"h": strings.Repeat("h", 600), "t": strings.Repeat("t", 600)}
	_, e := render(v, data, lim)
	wantRenderRefused(t, e, ReasonOutputTooLarge)
	if AsError(e).Details["part"] != "text" || AsError(e).Details["limit"] != int64(1000) {
		t.Errorf("details %v: want part text, limit 1000", AsError(e).Details)
	}
	data["t"] = strings.Repeat("t", 398)
	if r, e := render(v, data, lim); e != nil || len(r.HTML)+len(r.Text)+len(r.Subject) != 999 {
		t.Fatalf("within the limit: %v", e)
	}
}

// A render past its time budget stops and says so. The clock moves a
// second at every reading, so the budget of 1 s is over at the second write.
func TestRenderTimeBudget(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	lim := defaultLimits()
	lim.Now = func() time.Time { c.add(time.Second); return c.now() }
	v := storage.TemplateVersion{Subject: "s", Text: "{{#a}}line {{.}}\n{{/a}}", Strict: true}
	_, e := render(v, map[string]any{"a": items(10)}, lim)
	wantRenderRefused(t, e, ReasonRenderTimeout)
	if AsError(e).Details["timeout_ms"] != int64(1000) {
		t.Errorf("details %v", AsError(e).Details)
	}
	// On a clock that stands still the same render is fine.
	if r, e := render(v, map[string]any{"a": items(10)}, defaultLimits()); e != nil || !strings.HasPrefix(r.Text, "line 0\nline 1\n") {
		t.Fatalf("%q %v", r.Text, e)
	}
}

// Ordinary templates with lists, nested lists and dotted names render as
// before under the default limits.
func TestOrdinaryTemplatesRenderWithinLimits(t *testing.T) {
	orders := make([]any, 100)
	for i := range orders {
		orders[i] = map[string]any{"id": int64(i), "lines": []any{
			map[string]any{"sku": "A", "qty": int64(1)}, map[string]any{"sku": "B", "qty": int64(2)}}}
	}
	v := storage.TemplateVersion{Subject: "{{user.name}}: {{#orders}}{{/orders}}orders",
		HTML: "{{#orders}}<h2>{{id}}</h2>{{#lines}}<p>{{sku}} × {{qty}}</p>{{/lines}}{{/orders}}", Strict: true}
	r, e := render(v, map[string]any{"user": map[string]any{"name": "Ann"}, "orders": orders}, defaultLimits())
	if e != nil {
		t.Fatal(e)
	}
	if r.Subject != "Ann: orders" || strings.Count(r.HTML, "<p>") != 200 || !strings.HasPrefix(r.HTML, "<h2>0</h2><p>A × 1</p><p>B × 2</p><h2>1</h2>") {
		t.Fatalf("%q %q", r.Subject, r.HTML[:80])
	}
}

func TestRenderSteps(t *testing.T) {
	byKey, longest := listLengths(map[string]any{"a": items(3), "o": map[string]any{"b": items(5), "a": items(2)},
		"l": []any{items(7)}})
	if byKey["a"] != 3 || byKey["b"] != 5 || byKey["l"] != 1 || longest != 7 {
		t.Fatalf("%v %d", byKey, longest)
	}
	for _, c := range []struct {
		tmpl string
		want int64
	}{
		{"x", 0},
		// At the top a name is looked for in one context.
		{"{{v}}{{w}}", 2},
		{"{{a.b.c}}", 3},
		// A section: its lookup, its repeats, and what it holds per repeat,
		// looked up through one context more.
		{"{{#a}}{{v}}{{/a}}", 1 + 3 + 3*2},
		{"{{#a}}{{#b}}{{v}}{{/b}}{{/a}}", 1 + 3 + 3*2 + 15 + 15*3},
		{"{{^a}}{{v}}{{/a}}", 1 + 1 + 2},
		{"{{#missing}}{{v}}{{/missing}}", 1 + 1 + 2},
		{"{{#o.b}}{{v}}{{/o.b}}", 2 + 7 + 7*2},
		{"{{#.}}{{v}}{{/.}}", 2 + 7 + 7*2}, // "." counted as a dotted name
	} {
		tp, err := parsePart(c.tmpl, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := renderSteps(tp.Tags(), byKey, longest, 1, 0, 1<<40); got != c.want {
			t.Errorf("%s: %d steps, want %d", c.tmpl, got, c.want)
		}
	}
	// Deep nesting saturates instead of overflowing.
	tp, _ := parsePart(nested("a", 100, "{{v}}"), false)
	if got := renderSteps(tp.Tags(), byKey, longest, 1, 0, 1000); got <= 1000 {
		t.Errorf("100 nested sections: %d steps", got)
	}
}

// A message over --max-message-size is refused whether its content or its
// encoding makes it so: a plain one as invalid, a templated one as a render
// that failed.
func TestMessageSizeLimit(t *testing.T) {
	db, err := storage.Open(t.TempDir(), storagetest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	opts := options(c.now)
	opts.MaxMessageSize = 64 << 10
	a := mustNew(t, db, opts)
	p := sandboxSender(t, a)
	attachment := func(n int) []AttachmentInput {
		return []AttachmentInput{{Filename: "a.bin", Content: base64.StdEncoding.EncodeToString(make([]byte, n))}}
	}
	send := func(in MessageInput) error {
		in.From, in.To = "a@acme.test", []string{"x@dest.test"}
		if in.Subject == nil {
			in.Subject = ptr("s")
		}
		_, e := a.SendMessage(p, in)
		return e
	}
	for _, c := range []struct {
		name string
		in   MessageInput
	}{
		{"text", MessageInput{Text: ptr(strings.Repeat("x", 70<<10))}},
		{"html", MessageInput{HTML: ptr(strings.Repeat("<p>x</p>", 9<<10))}},
		// 50 KB of content, 68 KB once base64-encoded.
		{"encoded", MessageInput{Text: ptr("see attached"), Attachments: attachment(50 << 10)}},
	} {
		e := send(c.in)
		if e == nil {
			t.Fatalf("%s: accepted", c.name)
		}
		ae := AsError(e)
		if ae.Code != CodeValidation || ae.Status() != 400 || ae.Details["reason"] != ReasonMessageTooLarge ||
			ae.Details["field"] != "message" || ae.Details["limit"] != int64(64<<10) {
			t.Errorf("%s: got %v %v; want VALIDATION_ERROR message_too_large", c.name, ae, ae.Details)
		}
	}
	// Templated: the render is bounded, and so is what is added to it.
	e := send(MessageInput{Text: ptr("{{#a}}{{s}}{{/a}}"), TemplateData: map[string]any{"a": items(70), "s": strings.Repeat("x", 1000)}})
	wantRenderRefused(t, e, ReasonOutputTooLarge)
	e = send(MessageInput{Text: ptr("Hi {{name}}"), TemplateData: map[string]any{"name": "Ann"}, Attachments: attachment(50 << 10)})
	wantRenderRefused(t, e, ReasonOutputTooLarge)
	// Under the limit, encoded and all, is accepted.
	if e := send(MessageInput{Text: ptr(strings.Repeat("x", 40<<10)), Attachments: attachment(10 << 10)}); e != nil {
		t.Fatal(e)
	}
	if e := send(MessageInput{Text: ptr("{{#a}}{{s}}{{/a}}"), TemplateData: map[string]any{"a": items(40), "s": strings.Repeat("x", 1000)}}); e != nil {
		t.Fatal(e)
	}
}

package message

import (
	"fmt"
	"html"
	"slices"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"
)

// tokenRewrite rewrites link i to https://t.example/c/<i>.
func tokenRewrite(href string, i int) (string, bool) {
	return fmt.Sprintf("https://t.example/c/%d", i), true
}

func TestRewriteLinks(t *testing.T) {
	type call struct {
		href  string
		index int
	}
	tests := []struct {
		name    string
		in      string
		rewrite func(string, int) (string, bool) // tokenRewrite if nil
		want    string
		calls   []call // the URLs rewrite receives, in order
	}{
		{
			name:  "double quoted",
			in:    `<p>Hi <a href="https://example.com/a?b=c#d">there</a>.</p>`,
			want:  `<p>Hi <a href="https://t.example/c/0">there</a>.</p>`,
			calls: []call{{"https://example.com/a?b=c#d", 0}},
		},
		{
			name:  "upper case tag, attribute and scheme",
			in:    `<A HREF="HTTPS://Example.COM/Path">X</A>`,
			want:  `<A HREF="https://t.example/c/0">X</A>`,
			calls: []call{{"HTTPS://Example.COM/Path", 0}},
		},
		{
			name:  "single quoted keeps its quotes",
			in:    `<a href='http://example.com/?q="x"'>x</a>`,
			want:  `<a href='https://t.example/c/0'>x</a>`,
			calls: []call{{`http://example.com/?q="x"`, 0}},
		},
		{
			name:  "unquoted gets double quotes",
			in:    `<a href=https://example.com/x>x</a><a class=b href=http://e.org/ title=t>y</a>`,
			want:  `<a href="https://t.example/c/0">x</a><a class=b href="https://t.example/c/1" title=t>y</a>`,
			calls: []call{{"https://example.com/x", 0}, {"http://e.org/", 1}},
		},
		{
			name:  "unquoted ending in a slash is not self-closing",
			in:    `<a href=https://example.com/>x</a>`,
			want:  `<a href="https://t.example/c/0">x</a>`,
			calls: []call{{"https://example.com/", 0}},
		},
		{
			name: "entities are decoded for rewrite and the new value escaped",
			in:   `<a href="https://e.com/?a=1&amp;b=2&#38;c=3&#x26;d=&quot;4&quot;">x</a>`,
			rewrite: func(h string, i int) (string, bool) {
				return h + "&e=<5>'", true
			},
			want:  `<a href="https://e.com/?a=1&amp;b=2&amp;c=3&amp;d=&#34;4&#34;&amp;e=&lt;5&gt;&#39;">x</a>`,
			calls: []call{{`https://e.com/?a=1&b=2&c=3&d="4"`, 0}},
		},
		{
			name: "entity without semicolon before = is not decoded, as in browsers",
			in:   `<a href="https://e.com/?a=1&copy=2&not;x">x</a>`,
			rewrite: func(h string, i int) (string, bool) {
				return h, true
			},
			want:  `<a href="https://e.com/?a=1&amp;copy=2¬x">x</a>`,
			calls: []call{{"https://e.com/?a=1&copy=2¬x", 0}},
		},
		{
			name:  "whitespace around = and other attributes kept",
			in:    "<a class=\"btn\"  href = \"https://e.com/\"\ttarget=_blank\nstyle='color: red'>Go</a>",
			want:  "<a class=\"btn\"  href = \"https://t.example/c/0\"\ttarget=_blank\nstyle='color: red'>Go</a>",
			calls: []call{{"https://e.com/", 0}},
		},
		{
			name:  "whitespace inside the value is trimmed for rewrite",
			in:    "<a href=\" \n https://e.com/x \t\">x</a>",
			want:  `<a href="https://t.example/c/0">x</a>`,
			calls: []call{{"https://e.com/x", 0}},
		},
		{
			name:  "self-closing",
			in:    `<a href="https://e.com/"/><a href="https://e.com/" />`,
			want:  `<a href="https://t.example/c/0"/><a href="https://t.example/c/1" />`,
			calls: []call{{"https://e.com/", 0}, {"https://e.com/", 1}},
		},
		{
			name:  "area",
			in:    `<map name=m><AREA shape=rect coords="0,0,1,1" href="https://e.com/map"></map>`,
			want:  `<map name=m><AREA shape=rect coords="0,0,1,1" href="https://t.example/c/0"></map>`,
			calls: []call{{"https://e.com/map", 0}},
		},
		{
			name: "URLs in other attributes and tags are untouched",
			in: `<link href="https://e.com/s.css" rel=stylesheet><base href="https://e.com/">` +
				`<img src="https://e.com/i.png"><div data-href="https://e.com/"></div>` +
				`<a title="https://e.com/t" data-url="https://e.com/u" href="https://e.com/h">x</a>` +
				`<abbr href="https://e.com/">a</abbr><p>https://e.com/ in text</p>`,
			want: `<link href="https://e.com/s.css" rel=stylesheet><base href="https://e.com/">` +
				`<img src="https://e.com/i.png"><div data-href="https://e.com/"></div>` +
				`<a title="https://e.com/t" data-url="https://e.com/u" href="https://t.example/c/0">x</a>` +
				`<abbr href="https://e.com/">a</abbr><p>https://e.com/ in text</p>`,
			calls: []call{{"https://e.com/h", 0}},
		},
		{
			name: "links that are not http(s) are left alone and take no index",
			in: `<a href="mailto:a@e.com">m</a><a href="tel:+1">t</a><a href="#top">f</a>` +
				`<a href="/rel">r</a><a href="rel/x">r</a><a href="">e</a><a href>n</a><a>none</a>` +
				`<a href="javascript:alert(1)">j</a><a href="data:text/html,x">d</a>` +
				`<a href="//e.com/">sr</a><a href="https:e.com">o</a><a href="ftp://e.com/">f</a>` +
				`<a href="{{url}}">p</a><a href="https://{{host}}/x">p</a><a href="https://e.com/a` + "\n\t" + `b">c</a>` +
				`<a href="http://">h</a><a href="https://e.com/{{path}}">ok</a>`,
			want: `<a href="mailto:a@e.com">m</a><a href="tel:+1">t</a><a href="#top">f</a>` +
				`<a href="/rel">r</a><a href="rel/x">r</a><a href="">e</a><a href>n</a><a>none</a>` +
				`<a href="javascript:alert(1)">j</a><a href="data:text/html,x">d</a>` +
				`<a href="//e.com/">sr</a><a href="https:e.com">o</a><a href="ftp://e.com/">f</a>` +
				`<a href="{{url}}">p</a><a href="https://{{host}}/x">p</a><a href="https://e.com/a` + "\n\t" + `b">c</a>` +
				`<a href="http://">h</a><a href="https://t.example/c/0">ok</a>`,
			calls: []call{{"https://e.com/{{path}}", 0}},
		},
		{
			name: "comments, conditional comments and raw text are left alone",
			in: `<!-- <a href="https://e.com/c">c</a> -->` +
				`<!--[if mso]><a href="https://e.com/mso">o</a><![endif]-->` +
				`<![if !mso]><a href="https://e.com/notmso">n</a><![endif]>` +
				`<script>document.write('<a href="https://e.com/s">')</script>` +
				`<STYLE>a[href="https://e.com/"]{}</STYLE><title><a href="https://e.com/t"></title>` +
				`<textarea><a href="https://e.com/ta"></textarea><noscript><a href="https://e.com/ns"></noscript>` +
				`<a href="https://e.com/real">r</a>`,
			want: `<!-- <a href="https://e.com/c">c</a> -->` +
				`<!--[if mso]><a href="https://e.com/mso">o</a><![endif]-->` +
				`<![if !mso]><a href="https://t.example/c/0">n</a><![endif]>` +
				`<script>document.write('<a href="https://e.com/s">')</script>` +
				`<STYLE>a[href="https://e.com/"]{}</STYLE><title><a href="https://e.com/t"></title>` +
				`<textarea><a href="https://e.com/ta"></textarea><noscript><a href="https://e.com/ns"></noscript>` +
				`<a href="https://t.example/c/1">r</a>`,
			calls: []call{{"https://e.com/notmso", 0}, {"https://e.com/real", 1}},
		},
		{
			name: "opt-out attribute",
			in: `<a data-mb-notrack href="https://e.com/1">1</a><a href="https://e.com/2" DATA-MB-NOTRACK="yes">2</a>` +
				`<a href="https://e.com/3">3</a><a href="https://e.com/4" data-mb-notrackx>4</a>`,
			want: `<a data-mb-notrack href="https://e.com/1">1</a><a href="https://e.com/2" DATA-MB-NOTRACK="yes">2</a>` +
				`<a href="https://t.example/c/0">3</a><a href="https://t.example/c/1" data-mb-notrackx>4</a>`,
			calls: []call{{"https://e.com/3", 0}, {"https://e.com/4", 1}},
		},
		{
			name:  "duplicate URLs get distinct indexes",
			in:    `<a href="https://e.com/">a</a><a href="https://e.com/">b</a><a href='https://e.com/'>c</a>`,
			want:  `<a href="https://t.example/c/0">a</a><a href="https://t.example/c/1">b</a><a href='https://t.example/c/2'>c</a>`,
			calls: []call{{"https://e.com/", 0}, {"https://e.com/", 1}, {"https://e.com/", 2}},
		},
		{
			name: "rewrite may decline; indexes do not move",
			in:   `<a href="https://e.com/0">a</a><a href="https://e.com/1">b</a><a href="https://e.com/2">c</a>`,
			rewrite: func(h string, i int) (string, bool) {
				if i == 1 {
					return "", false
				}
				return tokenRewrite(h, i)
			},
			want:  `<a href="https://t.example/c/0">a</a><a href="https://e.com/1">b</a><a href="https://t.example/c/2">c</a>`,
			calls: []call{{"https://e.com/0", 0}, {"https://e.com/1", 1}, {"https://e.com/2", 2}},
		},
		{
			name:  "repeated href: the first counts, the second is untouched",
			in:    `<a href="https://a.com/" HREF="https://b.com/">x</a>`,
			want:  `<a href="https://t.example/c/0" HREF="https://b.com/">x</a>`,
			calls: []call{{"https://a.com/", 0}},
		},
		{
			name:  "non-ASCII around and inside",
			in:    "<p>Grüße 👋 — ça va?</p><a href=\"https://exämple.com/ü?q=日本\">日本</a><p>\xff\xfe</p>",
			want:  "<p>Grüße 👋 — ça va?</p><a href=\"https://t.example/c/0\">日本</a><p>\xff\xfe</p>",
			calls: []call{{"https://exämple.com/ü?q=日本", 0}},
		},
		{
			name:  "CRLF document",
			in:    "<html>\r\n<body>\r\n<a\r\nhref=\"https://e.com/\"\r\n>x</a>\r\n<a href=https://e.com/2\r\n>y</a>\r\n</body>\r\n</html>\r\n",
			want:  "<html>\r\n<body>\r\n<a\r\nhref=\"https://t.example/c/0\"\r\n>x</a>\r\n<a href=\"https://t.example/c/1\"\r\n>y</a>\r\n</body>\r\n</html>\r\n",
			calls: []call{{"https://e.com/", 0}, {"https://e.com/2", 1}},
		},
		{
			name: "malformed markup",
			in: `<p><a href=https://e.com/1>x</p></a><a/href="https://e.com/2"><a =href="https://e.com/3">` +
				`<ahref="https://e.com/4"><a<a href="https://e.com/5"></a</a><a href="https://e.com/6"`,
			want: `<p><a href="https://t.example/c/0">x</p></a><a/href="https://t.example/c/1"><a =href="https://e.com/3">` +
				`<ahref="https://e.com/4"><a<a href="https://e.com/5"></a</a><a href="https://e.com/6"`,
			calls: []call{{"https://e.com/1", 0}, {"https://e.com/2", 1}},
		},
		{
			name:  "a missing quote: the value runs to the next quote, as in browsers",
			in:    `<a href="https://e.com/1>x</a><a href="https://e.com/2">y</a>`,
			want:  `<a href="https://t.example/c/0"https://e.com/2">y</a>`,
			calls: []call{{`https://e.com/1>x</a><a href=`, 0}},
		},
		{
			name:  "backslashes are kept for the browser to interpret",
			in:    `<a href="https://e.com/a\b">x</a>`,
			want:  `<a href="https://t.example/c/0">x</a>`,
			calls: []call{{`https://e.com/a\b`, 0}},
		},
		{
			name:  "NUL in the value",
			in:    "<a href=\"https://e.com/\x00x\">x</a>",
			want:  "<a href=\"https://t.example/c/0\">x</a>",
			calls: []call{{"https://e.com/\ufffdx", 0}},
		},
		{
			name:  "empty document",
			in:    "",
			want:  "",
			calls: nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rw := tc.rewrite
			if rw == nil {
				rw = tokenRewrite
			}
			var calls []call
			out, links, edits := rewriteLinks(tc.in, func(h string, i int) (string, bool) {
				calls = append(calls, call{h, i})
				return rw(h, i)
			})
			if out != tc.want {
				t.Errorf("output\n got %q\nwant %q", out, tc.want)
			}
			if !slices.Equal(calls, tc.calls) {
				t.Errorf("rewrite calls\n got %+v\nwant %+v", calls, tc.calls)
			}
			var wantLinks []Link
			for _, c := range calls {
				if _, ok := rw(c.href, c.index); ok {
					wantLinks = append(wantLinks, Link{Index: c.index, URL: c.href})
				}
			}
			if !slices.Equal(links, wantLinks) {
				t.Errorf("links\n got %v\nwant %v", links, wantLinks)
			}
			checkOnlyHrefsChanged(t, tc.in, out, edits, links)
			if out2, links2 := RewriteLinks(tc.in, rw); out2 != out || !slices.Equal(links2, links) {
				t.Errorf("RewriteLinks differs from rewriteLinks")
			}
		})
	}
}

// afterHrefEquals reports whether in[:at] ends with the start of an href
// attribute's value: the attribute name (after white space, "/" or a
// quote), "=" with optional white space around it, and an optional quote.
func afterHrefEquals(in string, at int) bool {
	isSpace := func(c byte) bool { return strings.IndexByte(" \t\n\r\f", c) >= 0 }
	p := at
	if p > 0 && (in[p-1] == '"' || in[p-1] == '\'') {
		p--
	}
	for p > 0 && isSpace(in[p-1]) {
		p--
	}
	if p == 0 || in[p-1] != '=' {
		return false
	}
	p--
	for p > 0 && isSpace(in[p-1]) {
		p--
	}
	if p < 5 || !strings.EqualFold(in[p-4:p], "href") {
		return false
	}
	c := in[p-5]
	return isSpace(c) || c == '/' || c == '"' || c == '\''
}

// checkOnlyHrefsChanged checks that out is in with exactly the spans of
// edits replaced, that every span is the value of an href attribute (and
// the whole value), that each edit corresponds to one returned link whose
// URL the span decodes to, and that removing the spans from in and from
// out leaves the same bytes.
func checkOnlyHrefsChanged(t *testing.T, in, out string, edits []edit, links []Link) {
	t.Helper()
	if len(edits) != len(links) {
		t.Fatalf("%d edits for %d links", len(edits), len(links))
	}
	var restIn, restOut strings.Builder
	prevIn, prevOut := 0, 0
	for k, e := range edits {
		if e.start < prevIn || e.end < e.start || e.end > len(in) {
			t.Fatalf("edit %d [%d,%d) out of order or range (prev end %d, len %d)", k, e.start, e.end, prevIn, len(in))
		}
		if !afterHrefEquals(in, e.start) {
			t.Fatalf("edit %d at %d is not after href=: %q", k, e.start, in[max(0, e.start-20):e.start])
		}
		quote := in[e.start-1]
		if quote == '"' || quote == '\'' {
			if e.end >= len(in) || in[e.end] != quote {
				t.Fatalf("edit %d: quoted value does not end at the closing quote", k)
			}
			if strings.IndexByte(in[e.start:e.end], quote) >= 0 {
				t.Fatalf("edit %d: value contains its quote", k)
			}
			if strings.IndexByte(e.text, quote) >= 0 {
				t.Fatalf("edit %d: new value %q contains the quote", k, e.text)
			}
		} else {
			if strings.ContainsAny(in[e.start:e.end], " \t\n\r\f>") {
				t.Fatalf("edit %d: unquoted value %q contains a delimiter", k, in[e.start:e.end])
			}
			if len(e.text) < 2 || e.text[0] != '"' || e.text[len(e.text)-1] != '"' || strings.Contains(e.text[1:len(e.text)-1], `"`) {
				t.Fatalf("edit %d: unquoted value replaced by %q, not a double-quoted one", k, e.text)
			}
		}
		if got := strings.TrimFunc(html.UnescapeString(in[e.start:e.end]), func(r rune) bool { return r <= ' ' }); got != links[k].URL &&
			!strings.ContainsAny(in[e.start:e.end], "&\x00\r") {
			t.Fatalf("edit %d: span %q is not link URL %q", k, in[e.start:e.end], links[k].URL)
		}
		restIn.WriteString(in[prevIn:e.start])
		restOut.WriteString(out[prevOut : prevOut+(e.start-prevIn)])
		prevOut += e.start - prevIn
		if !strings.HasPrefix(out[prevOut:], e.text) {
			t.Fatalf("edit %d: output at %d does not hold %q", k, prevOut, e.text)
		}
		prevOut += len(e.text)
		prevIn = e.end
	}
	restIn.WriteString(in[prevIn:])
	restOut.WriteString(out[prevOut:])
	if restIn.String() != restOut.String() {
		t.Fatalf("bytes outside the href values changed:\n in %q\nout %q", restIn.String(), restOut.String())
	}
}

func TestRewriteLinksLongDocument(t *testing.T) {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\r\n<html><head><style>a{color:red}</style></head><body>\r\n")
	const n = 5000
	for i := range n {
		fmt.Fprintf(&b, "<p>Paragraph %d — some text &amp; more <b>bold</b>.</p>\r\n", i)
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, `<a href="https://e.com/p/%d?x=1&amp;y=2">link</a>`, i)
		case 1:
			fmt.Fprintf(&b, `<A HREF='http://e.com/p/%d'>link</A>`, i)
		case 2:
			fmt.Fprintf(&b, `<a class=c href=https://e.com/p/%d>link</a>`, i)
		case 3:
			fmt.Fprintf(&b, `<a href="mailto:x%d@e.com">mail</a><!-- <a href="https://e.com/c/%d"> -->`, i, i)
		}
		b.WriteString("\r\n")
	}
	b.WriteString("</body></html>\r\n")
	in := b.String()
	out, links, edits := rewriteLinks(in, tokenRewrite)
	if want := n * 3 / 4; len(links) != want {
		t.Fatalf("%d links rewritten, want %d", len(links), want)
	}
	for k, l := range links {
		if l.Index != k {
			t.Fatalf("link %d has index %d", k, l.Index)
		}
	}
	if links[0].URL != "https://e.com/p/0?x=1&y=2" || links[1].URL != "http://e.com/p/1" || links[2].URL != "https://e.com/p/2" {
		t.Fatalf("first links %v", links[:3])
	}
	checkOnlyHrefsChanged(t, in, out, edits, links)
	if strings.Count(out, "https://t.example/c/") != len(links) || strings.Count(out, `<!-- <a href="https://e.com/c/`) != n/4 {
		t.Fatal("wrong number of tracked or commented links in the output")
	}
}

// hrefsOf returns the decoded href of every <a> and <area> start tag that
// the tokenizer sees in doc.
func hrefsOf(doc string) []string {
	var hrefs []string
	z := xhtml.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			return hrefs
		}
		if tt != xhtml.StartTagToken && tt != xhtml.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		if tok.Data != "a" && tok.Data != "area" {
			continue
		}
		for _, a := range tok.Attr {
			if a.Key == "href" {
				hrefs = append(hrefs, a.Val)
				break
			}
		}
	}
}

func TestRewriteLinksRoundTrip(t *testing.T) {
	in := `<a href="https://e.com/?a=1&amp;b=2&lt;3">x</a><a href='https://e.com/"q"'>y</a><a href=https://e.com/&#39;>z</a>`
	out, links := RewriteLinks(in, func(h string, i int) (string, bool) { return h, true })
	if len(links) != 3 {
		t.Fatalf("links %v", links)
	}
	if got, want := hrefsOf(out), hrefsOf(in); !slices.Equal(got, want) {
		t.Fatalf("hrefs after identity rewrite %q, want %q", got, want)
	}
}

func TestInsertPixel(t *testing.T) {
	const url = "https://t.example/o/abc"
	pixel := PixelTag(url)
	tests := []struct {
		name, in, want string
	}{
		{"before </body>", "<html><body><p>x</p></body></html>", "<html><body><p>x</p>" + pixel + "</body></html>"},
		{"upper case with attributes", "<HTML><BODY><p>x</p></BODY foo=bar >\n</HTML>", "<HTML><BODY><p>x</p>" + pixel + "</BODY foo=bar >\n</HTML>"},
		{"the last of several", "<body>a</body><body>b</body>c", "<body>a</body><body>b" + pixel + "</body>c"},
		{"not in a comment", "<body>x</body><!-- </body> -->", "<body>x" + pixel + "</body><!-- </body> -->"},
		{"not in a script", "<body>x</body><script>'</body>'</script>", "<body>x" + pixel + "</body><script>'</body>'</script>"},
		{"only in a comment", "<p>x</p><!-- </body> -->", "<p>x</p><!-- </body> -->" + pixel},
		{"no body", "<p>x</p>", "<p>x</p>" + pixel},
		{"fragment text", "just text", "just text" + pixel},
		{"empty", "", pixel},
		{"not <bodyx>", "<p>x</bodyx>", "<p>x</bodyx>" + pixel},
		{"CRLF", "<body>\r\n<p>x</p>\r\n</body>\r\n", "<body>\r\n<p>x</p>\r\n" + pixel + "</body>\r\n"},
		{"truncated tag", `<p>x</p><a href="https://e`, `<p>x</p>` + pixel + `<a href="https://e`},
		{"truncated end tag", `<p>x</p></body`, `<p>x</p>` + pixel + `</body`},
		{"unterminated comment", `<p>x</p><!-- note`, `<p>x</p>` + pixel + `<!-- note`},
		{"comment ending in > but not closed", `<p>x</p><!--</script>`, `<p>x</p>` + pixel + `<!--</script>`},
		{"comment <!--!> is not closed", `<p>x</p><!--!>`, `<p>x</p>` + pixel + `<!--!>`},
		{"closed comments", `<!---->x<!-->y<!--->z<!-- a --!>`, `<!---->x<!-->y<!--->z<!-- a --!>` + pixel},
		{"bogus comment and doctype not closed", `<p>x</p><?php echo 1`, `<p>x</p>` + pixel + `<?php echo 1`},
		{"doctype not closed", `<!DOCTYPE html`, pixel + `<!DOCTYPE html`},
		{"final </", `<p>x</`, `<p>x` + pixel + `</`},
		{"unclosed style", `<p>x</p><style>p{}`, `<p>x</p>` + pixel + `<style>p{}`},
		{"closed style", `<p>x</p><style>p{}</style>`, `<p>x</p><style>p{}</style>` + pixel},
		{"non-ASCII", "<body>Grüße 👋</body>", "<body>Grüße 👋" + pixel + "</body>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := InsertPixel(tc.in, url); got != tc.want {
				t.Errorf("\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestPixelTag(t *testing.T) {
	got := PixelTag(`https://t.example/o/a?b=1&c="2"<x>`)
	want := `<img src="https://t.example/o/a?b=1&amp;c=&#34;2&#34;&lt;x&gt;" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px" />`
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	z := xhtml.NewTokenizer(strings.NewReader(got))
	if tt := z.Next(); tt != xhtml.SelfClosingTagToken {
		t.Fatalf("pixel tokenizes as %v", tt)
	}
	if tok := z.Token(); tok.Data != "img" || tok.Attr[0].Val != `https://t.example/o/a?b=1&c="2"<x>` {
		t.Fatalf("pixel token %v", tok)
	}
}

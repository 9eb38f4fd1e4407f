package message

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"
)

var fuzzSeeds = []string{
	`<p>Hi <a href="https://example.com/a?b=c#d">there</a>.</p>`,
	`<A HREF='HTTP://E.COM/?a=1&amp;b=2'>x</A><a href=https://e.com/x/>y</a>`,
	`<a class="b"  href = "https://e.com/" data-mb-notrack>x</a><a href="mailto:x@e.com">m</a>`,
	"<html>\r\n<body>\r\n<a\r\nhref=\" https://e.com/\x00 \"\r\n>x</a>\r\n</body>\r\n</html>\r\n",
	`<!-- <a href="https://e.com/c"> --><!--[if mso]><a href="https://e.com/mso"><![endif]-->`,
	`<script>'<a href="https://e.com/s">'</script><style>a{}</style><title><a href="https://e.com/t"></title>`,
	`<a/href="https://e.com/2"><a =href="https://e.com/3"><a href="https://a.com/" HREF="https://b.com/">`,
	`<map><area href=https://e.com/m /></map><a href="https://e.com/&copy=1&not;x&#x26;">`,
	`<a href="https://e.com/1>x</a><a href="https://e.com/2">y</a><a href="https://e.com/6"`,
	"<p>Grüße 👋</p><a href=\"https://exämple.com/ü\">日本</a>\xff<p>x</",
	`<body><a href="https://{{host}}/">a</a><a href="https://e.com/{{p}}">b</a></BODY ><!-- </body> -->`,
	`<plaintext><a href="https://e.com/">`,
}

// expectedTokens tokenizes in and replaces the href of every link that
// RewriteLinks should rewrite, decided here from the tokenizer's own tokens
// rather than from the raw bytes, by newHref. It also returns those links.
func expectedTokens(in string, newHref func(href string, i int) string) ([]xhtml.Token, []Link) {
	var (
		toks  []xhtml.Token
		links []Link
	)
	z := xhtml.NewTokenizer(strings.NewReader(in))
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			return toks, links
		}
		tok := z.Token()
		if (tt == xhtml.StartTagToken || tt == xhtml.SelfClosingTagToken) && (tok.Data == "a" || tok.Data == "area") {
			href := slices.IndexFunc(tok.Attr, func(a xhtml.Attribute) bool { return a.Key == "href" })
			optOut := slices.ContainsFunc(tok.Attr, func(a xhtml.Attribute) bool { return a.Key == NoTrackAttr })
			if href >= 0 && !optOut {
				if u, ok := trackableURL(tok.Attr[href].Val); ok {
					tok.Attr = slices.Clone(tok.Attr)
					tok.Attr[href].Val = newHref(u, len(links))
					links = append(links, Link{Index: len(links), URL: u})
				}
			}
		}
		toks = append(toks, tok)
	}
}

func tokensOf(doc string) []xhtml.Token {
	var toks []xhtml.Token
	z := xhtml.NewTokenizer(strings.NewReader(doc))
	for z.Next() != xhtml.ErrorToken {
		toks = append(toks, z.Token())
	}
	return toks
}

func sameTokens(a, b []xhtml.Token) bool {
	return slices.EqualFunc(a, b, func(x, y xhtml.Token) bool {
		return x.Type == y.Type && x.Data == y.Data && slices.Equal(x.Attr, y.Attr)
	})
}

// FuzzRewriteLinks checks, for any input, that RewriteLinks does not panic,
// changes no byte outside the href values it rewrites (each replaced span
// being a whole href value), rewrites exactly the links that the
// tokenizer's own view of the document says are trackable, and that an
// identity rewrite leaves every link pointing where it pointed.
func FuzzRewriteLinks(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(checkRewriteProperties)
}

func checkRewriteProperties(t *testing.T, in string) {
	{
		const token = "https://t.example/x?a=1&b='2'"
		fixed := func(string, int) string { return token }

		var seen []int
		out, links, edits := rewriteLinks(in, func(h string, i int) (string, bool) {
			seen = append(seen, i)
			return token, true
		})
		for k, i := range seen {
			if i != k {
				t.Fatalf("rewrite called with indexes %v", seen)
			}
		}
		checkOnlyHrefsChanged(t, in, out, edits, links)
		wantToks, wantLinks := expectedTokens(in, fixed)
		if !slices.Equal(links, wantLinks) {
			t.Fatalf("links %v, want %v", links, wantLinks)
		}
		if !sameTokens(tokensOf(out), wantToks) {
			t.Fatalf("output does not tokenize as the input with the tracked hrefs replaced:\n in %q\nout %q", in, out)
		}

		// Identity: rewrite returns the decoded URL; the document reads
		// the same, every tracked href now without surrounding space.
		same := func(h string, _ int) string { return h }
		out2, links2, edits2 := rewriteLinks(in, func(h string, i int) (string, bool) { return h, true })
		checkOnlyHrefsChanged(t, in, out2, edits2, links2)
		wantToks, _ = expectedTokens(in, same)
		if !sameTokens(tokensOf(out2), wantToks) {
			t.Fatalf("identity rewrite changed the document's meaning:\n in %q\nout %q", in, out2)
		}
		if !slices.Equal(links2, links) {
			t.Fatalf("identity rewrite saw other links")
		}

		// Declining every link changes nothing.
		if out3, links3 := RewriteLinks(in, func(string, int) (string, bool) { return "", false }); out3 != in || links3 != nil {
			t.Fatalf("declining rewrite changed the document")
		}
	}
}

// FuzzInsertPixel checks that InsertPixel does not panic, that its output
// is the input split in two around exactly one pixel tag, that the pixel is
// a tag of its own when the output is tokenized, and that it stands before
// the last </body> end tag when there is one.
func FuzzInsertPixel(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "https://t.example/o/abc")
	}
	f.Add("<body>x</body>", `https://t.example/o?a=1&b="2"<>`)
	f.Add("<p>x</p><!-- note", "")
	f.Add("<p>x</p><!--</script>", "")
	f.Add("<p>x</", "")
	f.Add("<p>x</p><style>p{}", "x")
	f.Fuzz(checkPixelProperties)
}

func checkPixelProperties(t *testing.T, in, pixelURL string) {
	{
		out := InsertPixel(in, pixelURL)
		tag := PixelTag(pixelURL)
		if len(out) != len(in)+len(tag) {
			t.Fatalf("output length %d, want %d", len(out), len(in)+len(tag))
		}
		prefix := 0
		for prefix < len(in) && in[prefix] == out[prefix] {
			prefix++
		}
		at := -1
		for i := prefix; i >= 0; i-- {
			if out[i:i+len(tag)] == tag && out[i+len(tag):] == in[i:] {
				at = i
				break
			}
		}
		if at < 0 {
			t.Fatalf("output is not the input around one pixel:\n in %q\nout %q", in, out)
		}

		// The pixel is a token of its own in the output.
		z := xhtml.NewTokenizer(strings.NewReader(out))
		offset, found := 0, false
		for !found {
			tt := z.Next()
			if tt == xhtml.ErrorToken {
				break
			}
			raw := z.Raw()
			found = offset == at && string(raw) == tag && tt == xhtml.SelfClosingTagToken
			offset += len(raw)
		}
		if !found {
			t.Fatalf("pixel at %d is not a tag of its own:\n in %q\nout %q", at, in, out)
		}

		// Before the last </body> of the input, if any.
		lastBody := -1
		z = xhtml.NewTokenizer(strings.NewReader(in))
		for offset = 0; ; {
			tt := z.Next()
			if tt == xhtml.ErrorToken {
				break
			}
			if tt == xhtml.EndTagToken {
				if tok := z.Token(); tok.Data == "body" {
					lastBody = offset
				}
			}
			offset += len(z.Raw())
		}
		if lastBody >= 0 && at != lastBody {
			t.Fatalf("pixel at %d, not before the last </body> at %d", at, lastBody)
		}
		if lastBody < 0 && len(in)-at > 0 && !strings.HasPrefix(in[at:], "<") {
			t.Fatalf("without </body> the pixel is at %d of %d, not before a markup construct", at, len(in))
		}
	}
}

// TestTrackingGenerated runs the fuzz properties on documents assembled
// from fragments that matter to the tokenizer and to link detection, which
// byte-level mutation reaches only rarely.
func TestTrackingGenerated(t *testing.T) {
	fragments := []string{
		"<a", "<A", "<area", "<AREA", "<ab", "<b>", "</a>", "<img", "<link", "<p>", "</p>",
		" href", " HREF", " hRef", "/href", " data-mb-notrack", " DATA-MB-NOTRACK", " title", " =href",
		"=", " = ", "\t=\n", `"`, `'`, " ", "\r\n", "\n", "\t", "\f", "/", ">", "/>", " />",
		"https://e.com/x", "http://E.COM", "HTTPS://e.com/a?b=1", "https:", "//e.com", "mailto:x@e.com",
		"#top", "javascript:x", "{{url}}", "https://e.com/{{p}}", "https://{{h}}/",
		"&amp;", "&#38;", "&#x26;", "&copy", "&copy=", "&not;", "&quot;", "&", "\x00", "é", "日本", "\xff",
		"<!--", "-->", "--!>", "<!-->", "<!DOCTYPE html>", "<![CDATA[", "]]>", "<?x", "<!", "</", "<",
		"<script>", "</script>", "<style>", "</STYLE>", "<title>", "</title>", "<textarea>", "<plaintext>",
		"<body>", "</body>", "</BODY >", "</body x=1>", "</html>", "<!--[if mso]>", "<![endif]-->",
	}
	rng := rand.New(rand.NewPCG(6, 6))
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		for k := rng.IntN(40); k > 0; k-- {
			b.WriteString(fragments[rng.IntN(len(fragments))])
		}
		in := b.String()
		checkRewriteProperties(t, in)
		checkPixelProperties(t, in, "https://t.example/o?a=1&b=2")
		if t.Failed() {
			t.Fatalf("input %q", in)
		}
	}
}

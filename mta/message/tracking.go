package message

// The HTML side of open and click tracking: rewriting links to tracking
// redirects and inserting the open pixel. Both functions are pure and work on
// the byte offsets of the tokens that golang.org/x/net/html's tokenizer
// reports; the document is never parsed into a tree or serialised again, so
// every byte outside the rewritten href values (and the inserted pixel) is
// kept exactly: whitespace, case, comments, conditional comments for Outlook,
// malformed markup, line endings and text encoding included.

import (
	"html"
	"net/url"
	"strings"

	xhtml "golang.org/x/net/html"
)

// NoTrackAttr is the attribute that opts a single link out of click
// tracking: an <a> or <area> that carries it (with any value or none, in any
// case, e.g. <a href="https://example.com/" data-mb-notrack>) is left as it
// is. The attribute itself is kept in the output.
const NoTrackAttr = "data-mb-notrack"

// Link is one link that RewriteLinks rewrote.
type Link struct {
	// Index is the link's position among the trackable links of the
	// document (see RewriteLinks), counted from 0 in document order.
	Index int
	// URL is the original destination, with entities decoded and
	// surrounding white space removed: the URL the recipient's client
	// would have followed, to which the click redirect must lead.
	URL string
}

// RewriteLinks replaces the destination of every trackable link in the HTML
// document doc by the URL that rewrite returns for it, and returns the new
// document with the links that were rewritten.
//
// A link is trackable when all of these hold:
//
//   - it is the start tag of an <a> or <area> element (tag and attribute
//     names in any case; self-closing or not), found by the HTML tokenizer
//     in markup: not inside a comment (<!-- … -->, including Outlook's
//     <!--[if mso]> … <![endif]--> blocks), a <!DOCTYPE>, a <![CDATA[…]]>
//     or <?…> section, nor inside the raw text of <script>, <style>,
//     <textarea>, <title>, <iframe>, <noscript>, <noembed>, <noframes>,
//     <xmp> or after <plaintext>;
//   - it has an href attribute (the first one, if it is repeated, as
//     browsers do), whose value, after decoding character references
//     (&amp;, &#38;, …) and trimming leading and trailing white space and
//     control characters, parses with net/url as an absolute URL with
//     scheme http or https (any case) and a non-empty host. So mailto:,
//     tel:, javascript:, data:, "#fragment", relative, empty and
//     scheme-relative ("//host/") hrefs are not tracked, nor values with
//     control characters inside, nor "https:host" without "//"; template
//     placeholders left in the HTML ("{{url}}") are not tracked unless they
//     sit inside an otherwise valid http(s) URL;
//   - it does not carry the opt-out attribute NoTrackAttr
//     (data-mb-notrack).
//
// Consequently these are never rewritten: URLs in other attributes or on
// other elements (src, background, <form action>, <link href>, <base
// href>, VML <v:roundrect href> buttons, which live inside Outlook's
// conditional comments), relative links even under a <base href>, links in
// <noscript> (read as raw text, as a browser with scripting on reads it), a
// tag cut off by the end of the document, and URLs in plain text. Links
// in Outlook's downlevel-revealed <![if !mso]> … <![endif]> blocks are
// ordinary markup and are rewritten.
//
// Trackable links are numbered 0, 1, 2… in document order; the number
// depends only on the document, not on what rewrite answers, and two links to
// the same URL get different numbers. For each trackable link rewrite is
// called once, in order, with the decoded URL and the number. When it returns
// ok, exactly the bytes of the attribute value are replaced: newHref is
// escaped for an attribute value (html.EscapeString) and placed between the
// value's original quote characters, or between double quotes if the value
// was unquoted. When it returns false the link is left as it is.
//
// Nothing else in the document changes: no other attribute, tag, text,
// comment or byte is touched, and the document is not normalised. The
// returned links, in document order, hold the index and the original decoded
// URL of each link that was rewritten.
func RewriteLinks(doc string, rewrite func(href string, index int) (newHref string, ok bool)) (string, []Link) {
	out, links, _ := rewriteLinks(doc, rewrite)
	return out, links
}

// edit replaces doc[start:end] by text.
type edit struct {
	start, end int
	text       string
}

// rewriteLinks is RewriteLinks that also returns the edits it made, so that
// tests can check that nothing outside them changed.
func rewriteLinks(doc string, rewrite func(href string, index int) (string, bool)) (string, []Link, []edit) {
	var (
		links []Link
		edits []edit
		index int
	)
	z := xhtml.NewTokenizer(strings.NewReader(doc))
	offset := 0
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			break
		}
		raw := z.Raw()
		start := offset
		offset += len(raw)
		if tt != xhtml.StartTagToken && tt != xhtml.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if !hasAttr || (string(name) != "a" && string(name) != "area") {
			continue
		}
		spans, ok := tagAttrSpans(raw)
		if !ok {
			continue
		}
		// Pair the tokenizer's decoded attributes with our spans: they
		// must be the same list in the same order, or the tag is left
		// alone.
		hrefAt, href, optOut, agree := -1, "", false, true
		for i, more := 0, true; more; i++ {
			var key, val []byte
			key, val, more = z.TagAttr()
			if i >= len(spans) || spans[i].key != string(key) || (!more && i+1 != len(spans)) {
				agree = false
				break
			}
			switch string(key) {
			case "href":
				hrefAt, href = i, string(val)
			case NoTrackAttr:
				optOut = true
			}
		}
		if !agree || hrefAt < 0 || optOut {
			continue
		}
		dest, ok := trackableURL(href)
		if !ok {
			continue
		}
		n := index
		index++
		newHref, ok := rewrite(dest, n)
		if !ok {
			continue
		}
		sp := spans[hrefAt]
		text := html.EscapeString(newHref)
		if sp.quote == 0 {
			text = `"` + text + `"`
		}
		edits = append(edits, edit{start: start + sp.valStart, end: start + sp.valEnd, text: text})
		links = append(links, Link{Index: n, URL: dest})
	}
	return applyEdits(doc, edits), links, edits
}

// trackableURL trims an href value, already decoded by the tokenizer, as a
// browser's URL parser does and reports whether the result is an absolute
// http or https URL with a host.
func trackableURL(v string) (string, bool) {
	v = strings.TrimFunc(v, func(r rune) bool { return r <= ' ' })
	if len(v) < len("http://x") {
		return "", false
	}
	// Cheap test before parsing: most hrefs that are not http(s) leave here.
	if !strings.EqualFold(v[:5], "http:") && !strings.EqualFold(v[:6], "https:") {
		return "", false
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return v, true
}

func applyEdits(doc string, edits []edit) string {
	if len(edits) == 0 {
		return doc
	}
	n := len(doc)
	for _, e := range edits {
		n += len(e.text) - (e.end - e.start)
	}
	var b strings.Builder
	b.Grow(n)
	prev := 0
	for _, e := range edits {
		b.WriteString(doc[prev:e.start])
		b.WriteString(e.text)
		prev = e.end
	}
	b.WriteString(doc[prev:])
	return b.String()
}

// attrSpan locates one attribute of a start tag within the tag's raw bytes.
type attrSpan struct {
	key              string // lower-cased (ASCII), NUL as U+FFFD, like TagAttr
	valStart, valEnd int    // the value without its quotes; empty if no value
	quote            byte   // '"', '\'' or 0 if unquoted (or no value)
}

// tagAttrSpans finds the attributes of the start tag whose complete raw
// bytes (from "<" to ">") are raw. It follows the tokenizer's own state
// machine (golang.org/x/net/html's readTag, readTagAttrKey and
// readTagAttrVal) step by step, so it returns the attributes the tokenizer
// keeps, in its order: those with a non-empty name, the first of each name.
// It reports false if the bytes do not form a complete start tag.
func tagAttrSpans(raw []byte) ([]attrSpan, bool) {
	n := len(raw)
	if n < 3 || raw[0] != '<' || raw[n-1] != '>' {
		return nil, false
	}
	isSpace := func(c byte) bool {
		return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f'
	}
	p := 2 // "<" and the first letter of the name are consumed
	skipSpace := func() {
		for p < n && isSpace(raw[p]) {
			p++
		}
	}
	// Tag name.
	for {
		if p >= n {
			return nil, false
		}
		c := raw[p]
		p++
		if isSpace(c) {
			break
		}
		if c == '/' || c == '>' {
			p--
			break
		}
	}
	skipSpace()
	var (
		spans []attrSpan
		seen  = map[string]bool{}
	)
	for {
		if p >= n {
			return nil, false
		}
		if raw[p] == '>' {
			p++
			break
		}
		// Attribute name.
		ks := p
		for {
			if p >= n {
				return nil, false
			}
			c := raw[p]
			p++
			if c == '=' && p == ks+1 {
				continue // a leading '=' is part of the name
			}
			if c == '=' || isSpace(c) || c == '/' || c == '>' {
				p--
				break
			}
		}
		ke := p
		// Attribute value.
		vs, ve, quote := p, p, byte(0)
		skipSpace()
		if p >= n {
			return nil, false
		}
		switch c := raw[p]; {
		case c == '/':
			p++
		case c != '=':
		default:
			p++
			skipSpace()
			if p >= n {
				return nil, false
			}
			switch q := raw[p]; q {
			case '>':
			case '"', '\'':
				p++
				vs = p
				for p < n && raw[p] != q {
					p++
				}
				if p >= n {
					return nil, false
				}
				ve = p
				p++
				quote = q
			default:
				vs = p
				p++
				for p < n && !isSpace(raw[p]) && raw[p] != '>' {
					p++
				}
				if p >= n {
					return nil, false
				}
				ve = p
				if isSpace(raw[p]) {
					p++
				}
			}
		}
		if ke > ks {
			seenKey := asciiLower(string(raw[ks:ke]))
			if !seen[seenKey] {
				seen[seenKey] = true
				spans = append(spans, attrSpan{
					key:      strings.ReplaceAll(seenKey, "\x00", "\ufffd"),
					valStart: vs, valEnd: ve, quote: quote,
				})
			}
		}
		skipSpace()
	}
	if p != n {
		return nil, false
	}
	return spans, true
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// PixelTag returns the open-tracking image element that InsertPixel adds for
// pixelURL.
func PixelTag(pixelURL string) string {
	return `<img src="` + html.EscapeString(pixelURL) +
		`" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px" />`
}

// InsertPixel adds the open-tracking image PixelTag(pixelURL) to the HTML
// document doc, immediately before the last </body> end tag (in any case,
// with or without attributes) that the HTML tokenizer finds in markup — not
// one inside a comment or inside the raw text of <script>, <style>,
// <textarea> and the like.
//
// When there is no such tag the image goes at the end of the document, or,
// if the document ends inside a construct that would swallow it (a
// truncated tag such as `<a href="x`, an unterminated comment or <!DOCTYPE,
// a <script>, <style>, <title>, <textarea>… element that is never closed, or
// a final "</"), just before that construct.
//
// Every byte of doc is kept, in order: the result is doc[:i] + PixelTag +
// doc[i:] for one i.
func InsertPixel(doc, pixelURL string) string {
	var (
		lastBody = -1 // offset of the last </body>
		open     = -1 // offset of a construct still open at the end
		offset   = 0
	)
	z := xhtml.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		raw := z.Raw()
		start := offset
		offset += len(raw)
		switch tt {
		case xhtml.ErrorToken:
			if len(raw) > 0 && open < 0 {
				open = start // a tag cut off by the end of the document
			}
		case xhtml.EndTagToken:
			open = -1 // only the end tag of a raw-text element ends it
			if name, _ := z.TagName(); string(name) == "body" {
				lastBody = start
			}
		case xhtml.StartTagToken, xhtml.SelfClosingTagToken:
			if name, _ := z.TagName(); rawTextElements[string(name)] {
				open = start
			}
		case xhtml.CommentToken, xhtml.DoctypeToken:
			if !terminated(raw) {
				open = start // runs to the end of the document
			}
		}
		if tt == xhtml.ErrorToken {
			break
		}
	}
	at := len(doc)
	switch {
	case lastBody >= 0:
		at = lastBody
	case open >= 0:
		at = open
	case strings.HasSuffix(doc, "</"):
		// Text "</" followed by "<img" would read as a bogus comment.
		at -= 2
	}
	return doc[:at] + PixelTag(pixelURL) + doc[at:]
}

// terminated reports whether the raw bytes of a comment or doctype token
// hold its end, rather than running to the end of the document. For
// "<!--" comments it repeats the tokenizer's scan (readComment): the
// comment ends at the first "-->", "--!>", or at a ">" right after "<!--".
func terminated(raw []byte) bool {
	if len(raw) < 4 || string(raw[:4]) != "<!--" {
		return len(raw) > 0 && raw[len(raw)-1] == '>'
	}
	rest := raw[4:]
	dashes, beginning := 0, true
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return i == len(rest)-1
			}
		case '!':
			if dashes >= 2 && i+1 < len(rest) {
				if rest[i+1] == '>' {
					return i+1 == len(rest)-1
				}
				if rest[i+1] == '-' {
					i++
					dashes, beginning = 1, false
					continue
				}
			}
		}
		dashes, beginning = 0, false
	}
	return false
}

// rawTextElements are the elements after whose start tag the tokenizer
// reads raw text up to the matching end tag (or the end of the document).
var rawTextElements = map[string]bool{
	"iframe": true, "noembed": true, "noframes": true, "noscript": true,
	"plaintext": true, "script": true, "style": true, "textarea": true,
	"title": true, "xmp": true,
}

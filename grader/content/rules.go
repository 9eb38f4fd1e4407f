package content

import (
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rules is the scoring table. Weights per dimension sum to 100: content
// (content_quality) and spam (spam_likelihood).
//
//	ID                             Dim      Weight Severity  Fires when
//	DATE_MISSING_OR_INVALID        content      10 warning   no Date, or not an RFC 5322 date
//	MESSAGE_ID_MISSING_OR_INVALID  content      10 warning   no Message-ID, or not <left@right>
//	FROM_MISSING_OR_INVALID        content      10 critical  no From, or not one parsable address
//	SUBJECT_EMPTY                  content      10 warning   subject empty or only white space
//	BODY_EMPTY                     content      15 critical  neither the text nor the HTML part has visible text
//	HTML_ONLY                      content      15 warning   an HTML part and no text/plain part
//	TEXT_PART_SHORT                content      10 warning   HTML visible text ≥ 200 chars and text part < 30% of it
//	HTML_IMAGE_HEAVY               content      10 warning   ≥ 1 image and < 20 chars of HTML text, or ≥ 3 images and < 100 chars per image
//	MIME_BROKEN                    content      10 warning   Raw has unparsable structure, encoding or invalid UTF-8
//	CHARSET_NOT_UTF8               content       0 info      a legacy charset is declared (note only)
//	SUBJECT_ALL_CAPS               spam         10 warning   ≥ 8 letters in the subject, ≥ 70% of them upper case
//	SUBJECT_EXCESS_PUNCTUATION     spam         10 warning   a run of 2+ of ! ? $ in the subject, or 3+ "!"
//	URL_SHORTENER                  spam         15 warning   a link's host is in URLShorteners
//	LINK_TEXT_RATIO_HIGH           spam         10 warning   ≥ 3 links and fewer than 10 words of text per link
//	SPAM_PHRASES                   spam         20 warning   a phrase of SpamPhrases in the subject or body (whole words, any case)
//	BULK_NO_LIST_UNSUBSCRIBE       spam         15 critical  bulk mail without a List-Unsubscribe URI
//	BULK_NO_ONE_CLICK              spam          5 warning   bulk mail with List-Unsubscribe but no RFC 8058 one-click
//	FROM_DISPLAY_NAME_SPOOF        spam         15 critical  From display name holds another address, or a domain unrelated to the From domain
var Rules = []Rule{
	{
		ID: "DATE_MISSING_OR_INVALID", Dimension: DimContent, Weight: 10, Severity: Warning, NeedsHeaders: true,
		Describe:  "the Date header field is missing or invalid",
		Recommend: `Add a Date header field in RFC 5322 format, e.g. "Date: Mon, 02 Jan 2006 15:04:05 +0000".`,
		Check:     checkDate,
	},
	{
		ID: "MESSAGE_ID_MISSING_OR_INVALID", Dimension: DimContent, Weight: 10, Severity: Warning, NeedsHeaders: true,
		Describe:  "the Message-ID header field is missing or invalid",
		Recommend: `Add a unique Message-ID on your own domain, e.g. "Message-ID: <unique-id@mail.example.com>".`,
		Check:     checkMessageID,
	},
	{
		ID: "FROM_MISSING_OR_INVALID", Dimension: DimContent, Weight: 10, Severity: Critical,
		Describe:  "the From address is missing or invalid",
		Recommend: `Send from exactly one valid address, e.g. "From: Example <no-reply@example.com>".`,
		Check:     checkFrom,
	},
	{
		ID: "SUBJECT_EMPTY", Dimension: DimContent, Weight: 10, Severity: Warning,
		Describe:  "the subject is empty",
		Recommend: "Give every message a short subject that says what it is about.",
		Check: func(m *Message) (bool, string) {
			return strings.TrimSpace(m.Subject) == "", ""
		},
	},
	{
		ID: "BODY_EMPTY", Dimension: DimContent, Weight: 15, Severity: Critical,
		Describe:  "the message has no visible text",
		Recommend: "Write the message's content as text, not only in images or attachments.",
		Check: func(m *Message) (bool, string) {
			return strings.TrimSpace(m.Text) == "" && m.HTMLText == "" && m.Images == 0, ""
		},
	},
	{
		ID: "HTML_ONLY", Dimension: DimContent, Weight: 15, Severity: Warning,
		Describe:  "the message has an HTML part but no plain-text part",
		Recommend: "Add a text/plain alternative with the same content as the HTML (multipart/alternative).",
		Check: func(m *Message) (bool, string) {
			return strings.TrimSpace(m.HTML) != "" && strings.TrimSpace(m.Text) == "", ""
		},
	},
	{
		ID: "TEXT_PART_SHORT", Dimension: DimContent, Weight: 10, Severity: Warning,
		Describe:  "the plain-text part is much shorter than the HTML part",
		Recommend: "Make the text/plain part carry the same content as the HTML part, not a stub.",
		Check:     checkTextShort,
	},
	{
		ID: "HTML_IMAGE_HEAVY", Dimension: DimContent, Weight: 10, Severity: Warning,
		Describe:  "the HTML is mostly images with little text",
		Recommend: "Put the message's content in text; keep images few and give them alt text.",
		Check:     checkImageHeavy,
	},
	{
		ID: "MIME_BROKEN", Dimension: DimContent, Weight: 10, Severity: Warning,
		Describe:  "the MIME structure or encoding is broken",
		Recommend: "Build the message with a MIME library: declared charset matching the bytes (UTF-8), known transfer encodings, closed multipart boundaries.",
		Check: func(m *Message) (bool, string) {
			return len(m.Broken) > 0, strings.Join(m.Broken, "; ")
		},
	},
	{
		ID: "CHARSET_NOT_UTF8", Dimension: DimContent, Weight: 0, Severity: Info,
		Describe:  "a legacy character set is declared",
		Recommend: "Prefer UTF-8 for every text part and encoded header word.",
		Check: func(m *Message) (bool, string) {
			return len(m.Charsets) > 0, strings.Join(m.Charsets, ", ")
		},
	},
	{
		ID: "SUBJECT_ALL_CAPS", Dimension: DimSpam, Weight: 10, Severity: Warning,
		Describe:  "the subject is written in capital letters",
		Recommend: "Write the subject in sentence case.",
		Check:     checkAllCaps,
	},
	{
		ID: "SUBJECT_EXCESS_PUNCTUATION", Dimension: DimSpam, Weight: 10, Severity: Warning,
		Describe:  "the subject has excessive punctuation",
		Recommend: `Drop repeated "!", "?" and "$" from the subject.`,
		Check:     checkPunctuation,
	},
	{
		ID: "URL_SHORTENER", Dimension: DimSpam, Weight: 15, Severity: Warning,
		Describe:  "links go through a public URL shortener",
		Recommend: "Link to your own domain directly; public shorteners hide the destination and are used by spam.",
		Check:     checkShortener,
	},
	{
		ID: "LINK_TEXT_RATIO_HIGH", Dimension: DimSpam, Weight: 10, Severity: Warning,
		Describe:  "there are many links for little text",
		Recommend: "Keep links few and explain them in text (at least 10 words per link).",
		Check:     checkLinkRatio,
	},
	{
		ID: "SPAM_PHRASES", Dimension: DimSpam, Weight: 20, Severity: Warning,
		Describe:  "the message uses phrases typical of spam",
		Recommend: "Rephrase promotional wording plainly; say what the message is about.",
		Check:     checkPhrases,
	},
	{
		ID: "BULK_NO_LIST_UNSUBSCRIBE", Dimension: DimSpam, Weight: 15, Severity: Critical,
		Describe:  "bulk mail without a List-Unsubscribe header field",
		Recommend: `Add "List-Unsubscribe: <https://example.com/unsubscribe/TOKEN>" and "List-Unsubscribe-Post: List-Unsubscribe=One-Click" (RFC 8058).`,
		Check: func(m *Message) (bool, string) {
			if !m.Bulk {
				return false, ""
			}
			return len(listUnsubscribeURIs(m)) == 0, ""
		},
	},
	{
		ID: "BULK_NO_ONE_CLICK", Dimension: DimSpam, Weight: 5, Severity: Warning,
		Describe:  "bulk mail without one-click unsubscribe (RFC 8058)",
		Recommend: `Add "List-Unsubscribe-Post: List-Unsubscribe=One-Click" and an https URI in List-Unsubscribe.`,
		Check:     checkOneClick,
	},
	{
		ID: "FROM_DISPLAY_NAME_SPOOF", Dimension: DimSpam, Weight: 15, Severity: Critical,
		Describe:  "the From display name names another address or domain",
		Recommend: "Use a display name without addresses or domain names other than the From address's own.",
		Check:     checkDisplayName,
	},
}

// URLShorteners are the hosts of public URL shorteners; a link to one of
// them or to a subdomain of one fires URL_SHORTENER.
var URLShorteners = []string{
	"bit.ly", "bitly.com", "tinyurl.com", "goo.gl", "t.co", "ow.ly", "is.gd",
	"buff.ly", "cutt.ly", "rebrand.ly", "shorturl.at", "tiny.cc", "rb.gy",
	"v.gd", "t.ly", "bl.ink", "soo.gd", "s.id", "clck.ru", "qr.ae",
	"lnkd.in", "shorte.st", "adf.ly", "x.co", "mcaf.ee", "su.pr", "yourls.org",
}

// SpamPhrases are matched case-insensitively as whole words (the characters
// either side are not letters or digits) in the subject, the text part and
// the HTML's visible text.
var SpamPhrases = []string{
	"act now", "100% free", "risk-free", "risk free", "winner", "you have won",
	"you've won", "click here", "limited time", "no credit check",
	"once in a lifetime", "urgent response", "cash bonus", "free money",
	"double your", "earn extra cash", "make money fast", "no obligation",
	"this is not spam", "guaranteed", "100% satisfied", "order now",
	"buy now", "call now", "apply now", "special promotion", "lowest price",
	"no hidden costs", "no fees", "while supplies last", "congratulations",
	"claim your prize", "exclusive deal", "miracle", "viagra", "casino",
	"weight loss", "work from home", "be your own boss", "extra income",
	"dear friend", "wire transfer", "million dollars", "increase sales",
	"what are you waiting for", "don't delete", "not junk",
}

// DisplayNameTLDs are the top-level domains for which a dotted word in a
// From display name is read as a domain name by FROM_DISPLAY_NAME_SPOOF
// (a closed list, so that "J.R.R. Tolkien" is not a domain).
var DisplayNameTLDs = []string{
	"com", "net", "org", "io", "co", "info", "biz", "us", "uk", "de", "fr",
	"it", "es", "nl", "ru", "cn", "jp", "br", "in", "au", "ca", "eu", "app",
	"dev", "me", "xyz", "online", "shop", "store", "site", "top", "gov", "edu",
}

func checkDate(m *Message) (bool, string) {
	v, ok := m.Header("Date")
	if !ok || strings.TrimSpace(v) == "" {
		return true, "missing"
	}
	if _, err := mail.ParseDate(strings.TrimSpace(v)); err != nil {
		return true, fmt.Sprintf("%q is not an RFC 5322 date", clip(v))
	}
	return false, ""
}

var msgIDRe = regexp.MustCompile(`^<[^<>@\s]+@[^<>@\s]+>$`)

func checkMessageID(m *Message) (bool, string) {
	v, ok := m.Header("Message-ID")
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return true, "missing"
	}
	if !msgIDRe.MatchString(v) {
		return true, fmt.Sprintf("%q is not of the form <id@domain>", clip(v))
	}
	return false, ""
}

func checkFrom(m *Message) (bool, string) {
	if strings.TrimSpace(m.From) == "" {
		return true, "missing"
	}
	if !m.FromValid {
		return true, fmt.Sprintf("%q is not one address", clip(m.From))
	}
	return false, ""
}

func checkTextShort(m *Message) (bool, string) {
	text := len([]rune(strings.Join(strings.Fields(m.Text), " ")))
	htm := len([]rune(m.HTMLText))
	if text == 0 || htm < 200 {
		return false, ""
	}
	if text*100 < htm*30 {
		return true, fmt.Sprintf("%d characters of text for %d of HTML", text, htm)
	}
	return false, ""
}

func checkImageHeavy(m *Message) (bool, string) {
	n := len([]rune(m.HTMLText))
	if m.Images >= 1 && n < 20 || m.Images >= 3 && n < 100*m.Images {
		return true, fmt.Sprintf("%d images, %d characters of text", m.Images, n)
	}
	return false, ""
}

func checkAllCaps(m *Message) (bool, string) {
	letters, upper := 0, 0
	for _, r := range m.Subject {
		if unicode.IsLetter(r) {
			letters++
			if unicode.IsUpper(r) {
				upper++
			}
		}
	}
	if letters >= 8 && upper*100 >= letters*70 {
		return true, fmt.Sprintf("%d of %d letters upper case", upper, letters)
	}
	return false, ""
}

var punctRunRe = regexp.MustCompile(`[!?$]{2,}`)

func checkPunctuation(m *Message) (bool, string) {
	if s := punctRunRe.FindString(m.Subject); s != "" {
		return true, fmt.Sprintf("%q", s)
	}
	if n := strings.Count(m.Subject, "!"); n >= 3 {
		return true, fmt.Sprintf("%d exclamation marks", n)
	}
	return false, ""
}

// linkHost returns the lower-case host of an absolute http(s) or
// scheme-relative link, or "".
func linkHost(link string) string {
	u, err := url.Parse(strings.TrimSpace(link))
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "":
	default:
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

func checkShortener(m *Message) (bool, string) {
	var hits []string
	for _, l := range m.Links {
		h := linkHost(l)
		if h == "" {
			continue
		}
		for _, s := range URLShorteners {
			if (h == s || strings.HasSuffix(h, "."+s)) && !slices.Contains(hits, s) {
				hits = append(hits, s)
			}
		}
	}
	return len(hits) > 0, strings.Join(hits, ", ")
}

func checkLinkRatio(m *Message) (bool, string) {
	links := max(m.HTMLLinks, m.TextLinks)
	if links < 3 {
		return false, ""
	}
	words := max(len(strings.Fields(textURL.ReplaceAllString(m.Text, " "))), len(strings.Fields(m.HTMLText)))
	if words < 10*links {
		return true, fmt.Sprintf("%d links, %d words", links, words)
	}
	return false, ""
}

func checkPhrases(m *Message) (bool, string) {
	hay := normalize(m.Subject + "\n" + m.Text + "\n" + m.HTMLText)
	var hits []string
	for _, p := range SpamPhrases {
		if hasPhrase(hay, strings.ToLower(p)) {
			hits = append(hits, fmt.Sprintf("%q", p))
		}
	}
	return len(hits) > 0, strings.Join(hits, ", ")
}

// hasPhrase reports whether p occurs in s with no letter or digit right
// before or after it. s must have its white space collapsed (normalize).
func hasPhrase(s, p string) bool {
	for i := 0; i <= len(s)-len(p); {
		j := strings.Index(s[i:], p)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(p)
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		i = start + 1
	}
	return false
}

// normalize lower-cases s, folds typographic apostrophes and collapses
// white space, for hasPhrase.
func normalize(s string) string {
	s = strings.NewReplacer("\u2019", "'", "\u2018", "'").Replace(strings.ToLower(s))
	return strings.Join(strings.Fields(s), " ")
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

var angleURIRe = regexp.MustCompile(`<([^<>]+)>`)

// listUnsubscribeURIs returns the URIs of the List-Unsubscribe fields.
func listUnsubscribeURIs(m *Message) []string {
	var out []string
	for _, v := range m.Headers["list-unsubscribe"] {
		for _, sm := range angleURIRe.FindAllStringSubmatch(v, -1) {
			out = append(out, strings.TrimSpace(sm[1]))
		}
	}
	return out
}

func checkOneClick(m *Message) (bool, string) {
	uris := listUnsubscribeURIs(m)
	if !m.Bulk || len(uris) == 0 {
		return false, "" // BULK_NO_LIST_UNSUBSCRIBE covers it
	}
	https := false
	for _, u := range uris {
		if strings.HasPrefix(strings.ToLower(u), "https://") {
			https = true
		}
	}
	post := false
	for _, v := range m.Headers["list-unsubscribe-post"] {
		if strings.EqualFold(strings.TrimSpace(v), "List-Unsubscribe=One-Click") {
			post = true
		}
	}
	switch {
	case !post && !https:
		return true, "no List-Unsubscribe-Post field and no https URI"
	case !post:
		return true, `no "List-Unsubscribe-Post: List-Unsubscribe=One-Click"`
	case !https:
		return true, "no https URI in List-Unsubscribe"
	}
	return false, ""
}

var (
	nameAddrRe   = regexp.MustCompile(`[^\s<>@"'(),;:]+@[^\s<>@"'(),;:]+`)
	nameDomainRe = regexp.MustCompile(`(?i)(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+([a-z]{2,})\b`)
)

func checkDisplayName(m *Message) (bool, string) {
	if !m.FromValid || m.FromName == "" {
		return false, ""
	}
	addr := strings.ToLower(m.FromAddress)
	domain := addr[strings.LastIndex(addr, "@")+1:]
	name := strings.ToLower(m.FromName)
	for _, other := range nameAddrRe.FindAllString(name, -1) {
		other = strings.Trim(other, ".")
		if other != addr {
			return true, fmt.Sprintf("display name %q holds the address %s, sent from %s", m.FromName, other, addr)
		}
	}
	name = nameAddrRe.ReplaceAllString(name, " ")
	for _, sm := range nameDomainRe.FindAllStringSubmatch(name, -1) {
		d := strings.Trim(sm[0], ".")
		if !slices.Contains(DisplayNameTLDs, strings.ToLower(sm[1])) {
			continue
		}
		if d == domain || strings.HasSuffix(domain, "."+d) || strings.HasSuffix(d, "."+domain) {
			continue
		}
		return true, fmt.Sprintf("display name %q names the domain %s, sent from %s", m.FromName, d, domain)
	}
	return false, ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// clip shortens a value quoted in a finding.
func clip(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

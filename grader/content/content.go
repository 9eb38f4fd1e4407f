package content

// Input is what is known about the email: the parsed fields, and Raw when
// the caller has the exact message.
type Input struct {
	// From is the From header field, "Display Name <addr@example.com>" or
	// a bare address.
	From    string
	Subject string
	// Text and HTML are the decoded text/plain and text/html bodies.
	Text string
	HTML string
	// Headers holds further header fields (Date, Message-ID,
	// List-Unsubscribe, ...). Keys are matched case-insensitively.
	Headers map[string][]string
	// Raw is an optional complete RFC 5322 message. When set, the fields
	// left empty above are read from it.
	Raw []byte
	// Parsed says the caller has already read Raw's MIME parts: Text and
	// HTML are its bodies even when empty, Broken and Charsets what that
	// reading found (what could not be read; the declared charsets other
	// than UTF-8 and US-ASCII). Raw is then read for its header only, so
	// the rules judge exactly the bodies the caller shows (the inbound
	// listener's email.received event) and the parts are walked once.
	Parsed           bool
	Broken, Charsets []string
	// Bulk says the sender declares this bulk or marketing mail, for which
	// List-Unsubscribe with one-click (RFC 8058) is expected. A
	// "Precedence: bulk" or "Precedence: list" header field implies it.
	Bulk bool
}

// Severities of a Finding.
const (
	Info     = "info"
	Warning  = "warning"
	Critical = "critical"
)

// Dimensions of a Rule, which are also the Category of its Finding.
const (
	DimContent = "content" // content_quality
	DimSpam    = "spam"    // spam_likelihood
)

// Finding is one observation: a rule that fired, or a rule that could not
// be checked (Severity info).
type Finding struct {
	Severity string // info, warning or critical
	Category string // "content" or "spam": the dimension of the rule
	Rule     string // the Rule's ID
	Message  string
}

// Score is a dimension's score: Max minus the weights of the rules that
// fired. Higher is better.
type Score struct {
	Score int
	Max   int
}

// Result is the outcome of Evaluate.
type Result struct {
	Content Score // content_quality
	Spam    Score // spam_likelihood: higher is better (less spammy)
	// Findings are in the order of Rules.
	Findings []Finding
	// Recommendations are the concrete fixes of the rules that fired,
	// without duplicates, in the order of Rules.
	Recommendations []string
}

// Rule is one row of the table: a named check on the Message, its
// dimension, its weight, the severity of its Finding, what it means, and
// how to fix it.
type Rule struct {
	ID        string
	Dimension string // DimContent or DimSpam
	Weight    int
	Severity  string
	// Describe is the Finding's message; the detail Check returns is
	// appended after a colon.
	Describe string
	// Recommend is the concrete fix, added to Result.Recommendations when
	// the rule fires; empty for none.
	Recommend string
	// NeedsHeaders marks rules that read header fields, skipped when no
	// header is known (see the package documentation).
	NeedsHeaders bool
	Check        func(*Message) (hit bool, detail string)
}

// Max returns the maximum score of a dimension: the sum of the weights of
// its rules in Rules.
func Max(dimension string) int {
	n := 0
	for _, r := range Rules {
		if r.Dimension == dimension {
			n += r.Weight
		}
	}
	return n
}

// Evaluate scores in against Rules.
func Evaluate(in Input) Result {
	m := newMessage(in)
	res := Result{
		Content: Score{Max: Max(DimContent)},
		Spam:    Score{Max: Max(DimSpam)},
	}
	res.Content.Score, res.Spam.Score = res.Content.Max, res.Spam.Max
	seen := map[string]bool{}
	for _, r := range Rules {
		if r.NeedsHeaders && !m.HeadersKnown {
			res.Findings = append(res.Findings, Finding{
				Severity: Info, Category: r.Dimension, Rule: r.ID,
				Message: "not checked: no header fields were given (submit the raw message to check them)",
			})
			continue
		}
		hit, detail := r.Check(m)
		if !hit {
			continue
		}
		msg := r.Describe
		if detail != "" {
			msg += ": " + detail
		}
		res.Findings = append(res.Findings, Finding{Severity: r.Severity, Category: r.Dimension, Rule: r.ID, Message: msg})
		switch r.Dimension {
		case DimContent:
			res.Content.Score -= r.Weight
		case DimSpam:
			res.Spam.Score -= r.Weight
		}
		if r.Recommend != "" && !seen[r.Recommend] {
			seen[r.Recommend] = true
			res.Recommendations = append(res.Recommendations, r.Recommend)
		}
	}
	return res
}

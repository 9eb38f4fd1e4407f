package app

import (
	"errors"
	"math"
	"strings"
	"time"

	"github.com/cbroglie/mustache"
)

// RenderLimits bound one render, so that a small template and small data
// cannot make the server produce or compute without end: nested sections
// over one list of n items repeat what they hold n×n×… times.
//
// The Mustache library renders into an io.Writer, which is where the
// output and time bounds act: once either is passed, every later write
// fails, nothing more is kept, and the library stops at its next piece of
// literal text. It cannot be stopped anywhere else: it ignores write
// errors of variables and sections write nothing, so a template of only
// nested sections and variables would keep looping. MaxSteps closes that
// gap before rendering starts: the most steps the template can take over
// the data (contexts looked into, section repeats) are counted (every section taken as many times as the
// longest list the data holds under its name), and a template over it is
// not rendered at all.
type RenderLimits struct {
	// MaxBytes bounds the subject, html and text together.
	MaxBytes int64
	// Timeout is the time budget of the whole render.
	Timeout time.Duration
	// MaxSteps bounds the steps the template could take (see
	// renderSteps).
	MaxSteps int64
	// Now is the clock the time budget is measured with.
	Now func() time.Time
}

// Reasons a render is refused within its limits (details.reason of
// TEMPLATE_RENDER_FAILED).
const (
	ReasonOutputTooLarge = "output_too_large"
	ReasonRenderTimeout  = "render_timeout"
	ReasonTooComplex     = "too_complex"
	// ReasonMessageTooLarge is details.reason of the VALIDATION_ERROR
	// refusing a message that is not templated and over the size limit.
	ReasonMessageTooLarge = "message_too_large"
)

var (
	errOutputTooLarge = errors.New("the rendered message is over the size limit")
	errRenderTimeout  = errors.New("rendering took longer than its time budget")
)

// renderBudget is what is left of one render's limits, shared by its parts.
type renderBudget struct {
	left     int64
	deadline time.Time
	now      func() time.Time
	err      error // sticky: once set, every write fails
}

func newRenderBudget(lim RenderLimits) *renderBudget {
	return &renderBudget{left: lim.MaxBytes, deadline: lim.Now().Add(lim.Timeout), now: lim.Now}
}

// partWriter collects one part's output within the shared budget.
type partWriter struct {
	b   *renderBudget
	out strings.Builder
}

func (w *partWriter) Write(p []byte) (int, error) {
	b := w.b
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.left {
		b.err = errOutputTooLarge
		return 0, b.err
	}
	if b.now().After(b.deadline) {
		b.err = errRenderTimeout
		return 0, b.err
	}
	b.left -= int64(len(p))
	w.out.Write(p)
	return len(p), nil
}

// listLengths returns, for each key of data at any depth, the length of
// the longest list held under it, and the length of the longest list of
// all.
func listLengths(data any) (byKey map[string]int64, longest int64) {
	byKey = map[string]int64{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if l, ok := val.([]any); ok && int64(len(l)) > byKey[k] {
					byKey[k] = int64(len(l))
				}
				walk(val)
			}
		case []any:
			longest = max(longest, int64(len(x)))
			for _, val := range x {
				walk(val)
			}
		}
	}
	walk(data)
	return byKey, longest
}

// renderSteps is the most steps tags can take over data whose list lengths
// are given, counted up to limit (any count over it is over). A step is
// one context looked into or one section repeat. Every tag visit looks its
// name up through the contexts of depth enclosing sections (and the top),
// one more per dotted segment. A section over a list repeats its tags once
// per item; over anything else at most once. A section name is looked up in
// every enclosing context, so it may be any list the data holds under that
// key; a dotted name or "." is taken as the longest list of all.
func renderSteps(tags []mustache.Tag, byKey map[string]int64, longest, mult, depth, limit int64) int64 {
	var total int64
	for _, t := range tags {
		total = satAdd(total, satMul(mult, depth+1+int64(strings.Count(t.Name(), "."))))
		if t.Type() == mustache.Section || t.Type() == mustache.InvertedSection {
			n := int64(1)
			if t.Type() == mustache.Section {
				if strings.Contains(t.Name(), ".") {
					n = max(n, longest)
				} else {
					n = max(n, byKey[t.Name()])
				}
			}
			runs := satMul(mult, n)
			total = satAdd(total, runs)
			total = satAdd(total, renderSteps(t.Tags(), byKey, longest, runs, depth+1, limit))
		}
		if total > limit {
			return total
		}
	}
	return total
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if b != 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/cbroglie/mustache"

	"mailbolt/storage"
)

func init() {
	// Strictness is decided per template (see render): the library reports
	// every missing variable, and lenient templates get empty defaults.
	mustache.AllowMissingVariables = false
}

// MaxTemplatePart bounds each of subject, html and text.
const MaxTemplatePart = 1 << 20

// TemplateInput is the content of a template version. Nil fields of an
// update keep the previous version's value.
type TemplateInput struct {
	Name    *string
	Subject *string
	HTML    *string
	Text    *string
	Strict  *bool
	// Alias names the template in place of its id; an empty string clears
	// it. Nil: none on create, unchanged on update. Not versioned.
	Alias *string
}

// Rendered is a template's output for one set of data.
type Rendered struct {
	Subject string
	HTML    string
	Text    string
	Version int
}

// parts lists a version's templated parts. Only html escapes variables.
func parts(v storage.TemplateVersion) []struct {
	name, src string
	escape    bool
} {
	return []struct {
		name, src string
		escape    bool
	}{{"subject", v.Subject, false}, {"html", v.HTML, true}, {"text", v.Text, false}}
}

func parsePart(src string, escape bool) (*mustache.Template, error) {
	t, err := mustache.ParseStringRaw(src, !escape)
	if err != nil {
		return nil, err
	}
	if name, found := findTag(t.Tags(), mustache.Partial); found {
		return nil, fmt.Errorf("partials are not supported ({{> %s}})", name)
	}
	return t, nil
}

func findTag(tags []mustache.Tag, typ mustache.TagType) (string, bool) {
	for _, t := range tags {
		if t.Type() == typ {
			return t.Name(), true
		}
		if t.Type() == mustache.Section || t.Type() == mustache.InvertedSection {
			if name, ok := findTag(t.Tags(), typ); ok {
				return name, true
			}
		}
	}
	return "", false
}

// ValidateTemplate checks a version's fields and that every part parses.
// A parse error is 400 INVALID_TEMPLATE with the part, line and reason.
func ValidateTemplate(v storage.TemplateVersion) error {
	if _, e := cleanName("name", v.Name); e != nil {
		return e
	}
	if strings.TrimSpace(v.Subject) == "" {
		return Validation("subject", "is required")
	}
	if strings.ContainsAny(v.Subject, "\r\n\x00") {
		return Validation("subject", "must be one line (no CR, LF or NUL)")
	}
	if v.HTML == "" && v.Text == "" {
		return Validation("html", "a template needs html, text or both")
	}
	for _, p := range parts(v) {
		if len(p.src) > MaxTemplatePart {
			return Validation(p.name, fmt.Sprintf("must be at most %d bytes", MaxTemplatePart))
		}
		if _, err := parsePart(p.src, p.escape); err != nil {
			return parseError(p.name, err)
		}
	}
	return nil
}

// parseError is 400 INVALID_TEMPLATE for a part that does not parse:
// details.part, details.reason (the parser's code, or a sentence for a
// partial) and details.line when the parser gives one. The templates
// routes and a message's inline template answer with it alike.
func parseError(part string, err error) *Error {
	details := map[string]any{"part": part, "reason": err.Error()}
	var pe mustache.ParseError
	if errors.As(err, &pe) {
		details["line"] = pe.Line
		details["reason"] = string(pe.Code)
	}
	return &Error{Code: CodeInvalidTemplate,
		Message: fmt.Sprintf("the %s template does not parse: %v", part, err), Details: details}
}

// SavedTemplate is a template as a write left it, with the version written.
type SavedTemplate struct {
	Template storage.Template
	Version  storage.TemplateVersion
}

// CreateTemplate stores a template and its version 1.
func (a *App) CreateTemplate(p Principal, in TemplateInput) (storage.Template, storage.TemplateVersion, error) {
	if err := a.authorize(p, ScopeTemplatesWrite); err != nil {
		return storage.Template{}, storage.TemplateVersion{}, err
	}
	accountID := p.Account.ID
	v := storage.TemplateVersion{Version: 1, Strict: true}
	applyInput(&v, in)
	v.Name = strings.TrimSpace(v.Name)
	if e := ValidateTemplate(v); e != nil {
		return storage.Template{}, v, e
	}
	alias, e := inputAlias(in, "")
	if e != nil {
		return storage.Template{}, v, e
	}
	now := a.Now()
	t := storage.Template{ID: NewID(), AccountID: accountID, Name: v.Name, Alias: alias, Version: 1, Strict: v.Strict, CreatedAt: now, UpdatedAt: now}
	v.TemplateID, v.CreatedAt = t.ID, now
	err := update(a, p, action{"template.create", t.ID}, &SavedTemplate{Template: t, Version: v}, func(tx *storage.Tx) error { return tx.PutTemplate(t, v) })
	return t, v, templateErr(err, alias)
}

// inputAlias is the alias an input gives a template that has was: was when
// the input leaves it out, "" when it clears it.
func inputAlias(in TemplateInput, was string) (string, error) {
	switch {
	case in.Alias == nil:
		return was, nil
	case *in.Alias == "":
		return "", nil
	}
	if e := ValidateAlias(*in.Alias); e != nil {
		return "", e
	}
	return *in.Alias, nil
}

func applyInput(v *storage.TemplateVersion, in TemplateInput) {
	for _, f := range []struct {
		dst *string
		src *string
	}{{&v.Name, in.Name}, {&v.Subject, in.Subject}, {&v.HTML, in.HTML}, {&v.Text, in.Text}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if in.Strict != nil {
		v.Strict = *in.Strict
	}
}

// UpdateTemplate stores a new version: the previous content with the given
// fields replaced. id may be the template's alias.
func (a *App) UpdateTemplate(p Principal, id string, in TemplateInput) (storage.Template, storage.TemplateVersion, error) {
	if err := a.authorize(p, ScopeTemplatesWrite); err != nil {
		return storage.Template{}, storage.TemplateVersion{}, err
	}
	accountID := p.Account.ID
	var t storage.Template
	var v storage.TemplateVersion
	var saved SavedTemplate
	err := update(a, p, action{"template.update", id}, &saved, func(tx *storage.Tx) error {
		var err error
		if t, err = resolveTemplate(tx, accountID, id); err != nil {
			return err
		}
		if v, err = tx.TemplateVersion(accountID, t.ID, t.Version); err != nil {
			return err
		}
		applyInput(&v, in)
		v.Name = strings.TrimSpace(v.Name)
		if e := ValidateTemplate(v); e != nil {
			return e
		}
		if t.Alias, err = inputAlias(in, t.Alias); err != nil {
			return err
		}
		now := a.Now()
		t.Version++
		t.Name, t.Strict, t.UpdatedAt = v.Name, v.Strict, now
		v.Version, v.CreatedAt = t.Version, now
		saved = SavedTemplate{Template: t, Version: v}
		return tx.PutTemplate(t, v)
	})
	return t, v, templateErr(err, t.Alias)
}

// Template reads a template and one of its versions (0: the newest). id
// may be the template's alias.
func (a *App) Template(p Principal, id string, version int) (storage.Template, storage.TemplateVersion, error) {
	if err := a.authorize(p, ScopeTemplatesRead); err != nil {
		return storage.Template{}, storage.TemplateVersion{}, err
	}
	return a.template(p.Account.ID, id, version)
}

// template reads a template version for use cases that have authorized
// their caller: sending with a template needs messages:write, not
// templates:read.
func (a *App) template(accountID, id string, version int) (storage.Template, storage.TemplateVersion, error) {
	var t storage.Template
	var v storage.TemplateVersion
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		if t, err = resolveTemplate(tx, accountID, id); err != nil {
			return err
		}
		if version == 0 {
			version = t.Version
		}
		if v, err = tx.TemplateVersion(accountID, t.ID, version); err != nil {
			return NotFound(fmt.Sprintf("version %d of the template", version))
		}
		return nil
	})
	return t, v, storageErr(err, "template")
}

// ListTemplates lists an account's templates.
func (a *App) ListTemplates(p Principal, opts storage.ListOptions) (list []storage.Template, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeTemplatesRead); err != nil {
		return nil, res, 0, err
	}
	accountID := p.Account.ID
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, res, err = tx.Templates(accountID, opts)
		total = tx.TemplateCount(accountID)
		return err
	})
	return list, res, total, storageErr(err, "template")
}

// TemplateVersions lists a template's versions, newest first.
func (a *App) TemplateVersions(p Principal, id string, opts storage.ListOptions) (list []storage.TemplateVersion, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeTemplatesRead); err != nil {
		return nil, res, 0, err
	}
	accountID := p.Account.ID
	err := a.db.View(func(tx *storage.Tx) error {
		t, err := resolveTemplate(tx, accountID, id)
		if err != nil {
			return err
		}
		list, res, err = tx.TemplateVersions(accountID, t.ID, opts)
		total = t.Version
		return err
	})
	return list, res, total, storageErr(err, "template")
}

// RenderTemplate renders one version (0: the newest) of a template.
func (a *App) RenderTemplate(p Principal, id string, version int, data map[string]any) (Rendered, error) {
	if err := a.authorize(p, ScopeTemplatesRead); err != nil {
		return Rendered{}, err
	}
	accountID := p.Account.ID
	_, v, e := a.template(accountID, id, version)
	if e != nil {
		return Rendered{}, e
	}
	return render(v, data, a.renderLimits())
}

// RenderDraft renders content that is not saved: the template's newest
// version with in's fields replaced, as saving it would store it (the
// editor's live preview). It needs templates:write, as saving does, and
// id names one of the caller's templates; nothing is stored. The output's
// Version is 0. The parts are bounded as saving bounds them; the render
// has the limits of RenderTemplate.
func (a *App) RenderDraft(p Principal, id string, in TemplateInput, data map[string]any) (Rendered, error) {
	if err := a.authorize(p, ScopeTemplatesWrite); err != nil {
		return Rendered{}, err
	}
	_, v, e := a.template(p.Account.ID, id, 0)
	if e != nil {
		return Rendered{}, e
	}
	applyInput(&v, in)
	if strings.ContainsAny(v.Subject, "\r\n\x00") {
		return Rendered{}, Validation("subject", "must be one line (no CR, LF or NUL)")
	}
	for _, p := range parts(v) {
		if len(p.src) > MaxTemplatePart {
			return Rendered{}, Validation(p.name, fmt.Sprintf("must be at most %d bytes", MaxTemplatePart))
		}
	}
	out, err := render(v, data, a.renderLimits())
	out.Version = 0
	return out, err
}

// renderLimits are the bounds of one render: the output may be as large as
// a whole message.
func (a *App) renderLimits() RenderLimits {
	return RenderLimits{MaxBytes: a.opts.MaxMessageSize, Timeout: a.opts.RenderTimeout,
		MaxSteps: a.opts.RenderSteps, Now: a.opts.Now}
}

var missingVar = regexp.MustCompile(`missing variable "([^"]*)"`)

// render fills a template version with data within lim. A strict version
// fails with 422 TEMPLATE_RENDER_FAILED naming the first variable data
// lacks; a lenient one renders missing variables as empty. A subject that
// renders with a line break is refused: it would split the header. A
// render that would pass lim is refused with details.reason saying which
// bound (see RenderLimits), and stops as soon as it passes it.
func render(v storage.TemplateVersion, data map[string]any, lim RenderLimits) (Rendered, error) {
	out := Rendered{Version: v.Version}
	dst := map[string]*string{"subject": &out.Subject, "html": &out.HTML, "text": &out.Text}
	base := normalizeData(data).(map[string]any)
	type parsed struct {
		name string
		t    *mustache.Template
		ctx  map[string]any
	}
	var todo []parsed
	byKey, longest := listLengths(base)
	var steps int64
	for _, p := range parts(v) {
		if p.src == "" {
			continue
		}
		t, err := parsePart(p.src, p.escape)
		if err != nil {
			return Rendered{}, parseError(p.name, err)
		}
		ctx := base
		if !v.Strict {
			ctx = withDefaults(ctx, t.Tags())
		}
		if steps = satAdd(steps, renderSteps(t.Tags(), byKey, longest, 1, 0, lim.MaxSteps)); steps > lim.MaxSteps {
			return Rendered{}, &Error{Code: CodeTemplateRenderFailed,
				Message: fmt.Sprintf("the %s could take more than %d steps over this data (its sections repeat over lists, nested): too complex to render", p.name, lim.MaxSteps),
				Details: map[string]any{"part": p.name, "reason": ReasonTooComplex, "limit": lim.MaxSteps}}
		}
		todo = append(todo, parsed{p.name, t, ctx})
	}
	budget := newRenderBudget(lim)
	for _, p := range todo {
		w := &partWriter{b: budget}
		err := p.t.FRender(w, p.ctx)
		switch budget.err {
		case errOutputTooLarge:
			return Rendered{}, &Error{Code: CodeTemplateRenderFailed,
				Message: fmt.Sprintf("the rendered message is over the limit of %d bytes (stopped in the %s)", lim.MaxBytes, p.name),
				Details: map[string]any{"part": p.name, "reason": ReasonOutputTooLarge, "limit": lim.MaxBytes}}
		case errRenderTimeout:
			return Rendered{}, &Error{Code: CodeTemplateRenderFailed,
				Message: fmt.Sprintf("rendering took longer than its budget of %s (stopped in the %s)", lim.Timeout, p.name),
				Details: map[string]any{"part": p.name, "reason": ReasonRenderTimeout, "timeout_ms": lim.Timeout.Milliseconds()}}
		}
		if err != nil {
			details := map[string]any{"part": p.name}
			msg := fmt.Sprintf("rendering the %s failed: %v", p.name, err)
			if m := missingVar.FindStringSubmatch(err.Error()); m != nil {
				details["variable"] = m[1]
				msg = fmt.Sprintf("the %s uses the variable %q, which the data does not have", p.name, m[1])
			}
			return Rendered{}, &Error{Code: CodeTemplateRenderFailed, Message: msg, Details: details}
		}
		*dst[p.name] = w.out.String()
	}
	if strings.ContainsAny(out.Subject, "\r\n\x00") {
		return Rendered{}, &Error{Code: CodeTemplateRenderFailed,
			Message: "the rendered subject contains a line break or NUL", Details: map[string]any{"part": "subject"}}
	}
	return out, nil
}

// normalizeData prepares JSON-decoded data for rendering: whole numbers
// print as integers (1000000, not 1e+06), other numbers in plain decimal,
// and null as nothing. A json.Number (the API decodes template data with
// UseNumber) written as an integer prints digit for digit, however large:
// as a float64 it would be rounded beyond 2^53.
func normalizeData(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = normalizeData(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = normalizeData(val)
		}
		return out
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		if integerLiteral(string(x)) {
			return string(x) // beyond int64: as written, which JSON keeps canonical
		}
		f, err := x.Float64()
		if err != nil {
			return string(x) // out of range: the API refuses it before
		}
		return normalizeData(f)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	return v
}

// integerLiteral reports whether s, a JSON number, is written without a
// fraction or an exponent.
func integerLiteral(s string) bool {
	return !strings.ContainsAny(s, ".eE")
}

// withDefaults returns data with an empty value under every variable name
// the template uses and data lacks, following dotted names into nested
// maps, so a lenient template renders missing variables as "".
func withDefaults(data map[string]any, tags []mustache.Tag) map[string]any {
	out := make(map[string]any, len(data))
	for k, v := range data {
		out[k] = v
	}
	var walk func([]mustache.Tag)
	walk = func(tags []mustache.Tag) {
		for _, t := range tags {
			switch t.Type() {
			case mustache.Variable:
				if t.Name() != "." {
					setDefault(out, strings.Split(t.Name(), "."))
				}
			case mustache.Section, mustache.InvertedSection:
				walk(t.Tags())
			}
		}
	}
	walk(tags)
	return out
}

func setDefault(m map[string]any, path []string) {
	cur, ok := m[path[0]]
	if len(path) == 1 {
		if !ok {
			m[path[0]] = ""
		}
		return
	}
	switch next := cur.(type) {
	case map[string]any:
		copied := make(map[string]any, len(next))
		for k, v := range next {
			copied[k] = v
		}
		setDefault(copied, path[1:])
		m[path[0]] = copied
	case nil:
		child := map[string]any{}
		setDefault(child, path[1:])
		m[path[0]] = child
	}
}

package app

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"mailbolt/storage"
)

// SuppressionCSVColumns are the columns of a suppressions CSV file, in the
// order an export writes them: what an import takes, so an export imports
// back as it was. An empty stream is an entry for every stream.
var SuppressionCSVColumns = []string{"recipient", "reason", "stream"}

// csvAliases are other header names an import takes for a column: many
// ESPs export the address as "email".
var csvAliases = map[string]string{"email": "recipient"}

// utf8BOM is what spreadsheet programs put before a CSV file they save.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// csvError is a refused CSV file: 400 VALIDATION_ERROR naming the line
// (details.line) and, when it is about one, the column (details.field).
func csvError(line int, field, reason string) *Error {
	e := NewError(CodeValidation, fmt.Sprintf("line %d: %s", line, reason)).With("line", line).With("reason", reason)
	if field != "" {
		e.Message = fmt.Sprintf("line %d: %s: %s", line, field, reason)
		e.With("field", field)
	}
	return e
}

// ReadSuppressionsCSV reads a suppressions CSV file (RFC 4180, UTF-8, an
// optional byte order mark): a header row naming the columns, in any
// order (recipient, or its alias email, is required; reason and stream
// are optional; no others), then one suppression per row. Each row keeps
// its line number, by which ImportSuppressions names a bad one. A file of
// more than MaxSuppressionImport rows is refused without reading the
// rest. Only the file's form is checked here, UTF-8 included: a cell that
// is not (a file a spreadsheet saved in Latin-1, say) is refused naming its
// line and column, saying why, where ImportSuppressions would call it no
// address or an unknown reason. The values are checked by
// ImportSuppressions.
func ReadSuppressionsCSV(r io.Reader) ([]SuppressionInput, error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(len(utf8BOM)); bytes.Equal(head, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, csvError(1, "", "a header row is required: "+strings.Join(SuppressionCSVColumns, ","))
	}
	if err != nil {
		return nil, csvParseError(err)
	}
	col := map[string]int{}
	for i, name := range header {
		if !utf8.ValidString(name) {
			return nil, csvError(1, "", fmt.Sprintf("column %d of the header row must be valid UTF-8", i+1))
		}
		name = strings.ToLower(strings.TrimSpace(name))
		if canonical, ok := csvAliases[name]; ok {
			name = canonical
		}
		switch _, dup := col[name]; {
		case !isColumn(name):
			return nil, csvError(1, header[i], "unknown column; the columns are "+strings.Join(SuppressionCSVColumns, ", ")+" (email is taken for recipient)")
		case dup:
			return nil, csvError(1, name, "column appears more than once")
		}
		col[name] = i
	}
	if _, ok := col["recipient"]; !ok {
		return nil, csvError(1, "recipient", "the header row has no recipient column (or email)")
	}
	get := func(rec []string, name string) string {
		if i, ok := col[name]; ok {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	var rows []SuppressionInput
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, csvParseError(err)
		}
		line, _ := cr.FieldPos(0)
		if len(rows) == MaxSuppressionImport {
			return nil, csvError(line, "", fmt.Sprintf("an import holds at most %d suppressions: split the file", MaxSuppressionImport)).
				With("limit", MaxSuppressionImport)
		}
		for _, name := range SuppressionCSVColumns {
			if i, ok := col[name]; ok && !utf8.ValidString(rec[i]) {
				return nil, csvError(line, name, ReasonNotUTF8)
			}
		}
		rows = append(rows, SuppressionInput{Recipient: unguardCell(get(rec, "recipient")),
			Reason: unguardCell(get(rec, "reason")), Stream: unguardCell(get(rec, "stream")), Line: line})
	}
}

// formulaStart holds the characters that make a spreadsheet program read a
// cell beginning with one as a formula. An address may begin with "=",
// "+" or "-" (and a quoted one with "@"), and an address is what a
// stranger types into a signup form, so an export opened in a spreadsheet
// could run what the stranger wrote.
const formulaStart = "=+-@\t\r"

// formulaLike reports whether v is zero or more apostrophes followed by a
// formula's first character.
func formulaLike(v string) bool {
	rest := strings.TrimLeft(v, "'")
	return rest != "" && strings.IndexByte(formulaStart, rest[0]) >= 0
}

// guardCell is v as an export writes it: with an apostrophe before it
// when it is formulaLike, which spreadsheet programs show as text. An
// apostrophe already there (a real one, "'" is allowed in an address) gets
// one more, so unguardCell gives v back exactly.
func guardCell(v string) string {
	if formulaLike(v) {
		return "'" + v
	}
	return v
}

// unguardCell undoes guardCell: one apostrophe comes off a cell that is
// one or more apostrophes and then a formula's first character. Any other
// cell is taken as it is.
func unguardCell(v string) string {
	if strings.HasPrefix(v, "'") && formulaLike(v) {
		return v[1:]
	}
	return v
}

func isColumn(name string) bool {
	for _, c := range SuppressionCSVColumns {
		if c == name {
			return true
		}
	}
	return false
}

// csvParseError names the line of a row encoding/csv could not read (a
// stray quote, a row with more or fewer fields than the header).
func csvParseError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		reason := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			reason = "the row has a different number of fields than the header"
		}
		return csvError(pe.Line, "", reason)
	}
	return NewError(CodeValidation, "the CSV could not be read: "+err.Error()).With("field", "body")
}

// SuppressionCSVWriter writes suppressions as CSV, in
// SuppressionCSVColumns: the export's format.
type SuppressionCSVWriter struct {
	w      *csv.Writer
	header bool
}

// NewSuppressionCSVWriter writes to w; the header row goes out with the
// first Write.
func NewSuppressionCSVWriter(w io.Writer) *SuppressionCSVWriter {
	return &SuppressionCSVWriter{w: csv.NewWriter(w)}
}

// Write writes the header row once and then a row per suppression, and
// flushes, so each chunk of an export reaches the reader as it is read.
func (c *SuppressionCSVWriter) Write(list []storage.Suppression) error {
	if !c.header {
		c.header = true
		if err := c.w.Write(SuppressionCSVColumns); err != nil {
			return err
		}
	}
	for _, s := range list {
		if err := c.w.Write([]string{guardCell(s.Recipient), guardCell(s.Reason), guardCell(s.Stream)}); err != nil {
			return err
		}
	}
	c.w.Flush()
	return c.w.Error()
}

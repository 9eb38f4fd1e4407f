package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"mailbolt/app"
)

// errBodyTooLarge is the answer to a body over the configured cap.
func errBodyTooLarge(limit int64) *app.Error {
	return &app.Error{Status: http.StatusRequestEntityTooLarge, Code: "BODY_TOO_LARGE",
		Message: fmt.Sprintf("request body is larger than %d bytes", limit),
		Details: map[string]any{"max_bytes": limit}}
}

// readBody reads the (already size-capped) request body.
func readBody(r *http.Request, limit int64) ([]byte, *app.Error) {
	data, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errBodyTooLarge(limit)
	}
	if err != nil {
		return nil, app.Validation("body", "could not be read: "+err.Error())
	}
	return data, nil
}

// decodeStrict parses a JSON object into v. An unknown field, a wrong type,
// a body that is not one JSON object, or trailing data is 400
// VALIDATION_ERROR with the offending field named in details.
func decodeStrict(data []byte, v any) *app.Error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return app.Validation("body", "must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return app.Validation("body", "unexpected data after the JSON object")
	}
	return nil
}

func decodeError(err error) *app.Error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return app.Validation(field, fmt.Sprintf("must be of type %s, not %s", jsonType(typeErr.Type.Kind().String()), typeErr.Value))
	case errors.As(err, &syntaxErr):
		return app.Validation("body", fmt.Sprintf("invalid JSON at byte %d: %v", syntaxErr.Offset, syntaxErr))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return app.Validation("body", "invalid JSON: unexpected end of input")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return app.Validation(field, "unknown field")
	}
	return app.Validation("body", "invalid JSON: "+err.Error())
}

// jsonType names a Go kind the way a JSON client thinks of it.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	case "float32", "float64":
		return "number"
	}
	if strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint") {
		return "integer"
	}
	return kind
}

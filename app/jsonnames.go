package app

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// RepeatedName finds a name that appears twice in one object of the JSON
// value data, at any depth, and returns where: "a", "a.b", "list[2].c".
// Request bodies refuse a repeated name (docs/errors.md, "Strict JSON");
// this holds a free-form object such as metadata to the same rule. data
// is valid JSON (the caller has decoded it): for anything else the answer
// means nothing.
func RepeatedName(data []byte) (path string, found bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	path, found, err := walkNames(dec, "")
	return path, found && err == nil
}

func walkNames(dec *json.Decoder, at string) (string, bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", false, err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return "", false, err
			}
			name, _ := tok.(string)
			p := name
			if at != "" {
				p = at + "." + name
			}
			if seen[name] {
				return p, true, nil
			}
			seen[name] = true
			if path, found, err := walkNames(dec, p); found || err != nil {
				return path, found, err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if path, found, err := walkNames(dec, fmt.Sprintf("%s[%d]", at, i)); found || err != nil {
				return path, found, err
			}
		}
	default:
		return "", false, nil // a scalar
	}
	_, err = dec.Token() // the closing delimiter
	return "", false, err
}

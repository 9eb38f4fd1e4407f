package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// clientOperations are the operations of the OpenAPI document a client
// library covers: all but those marked "x-client": false (the document
// itself and the routes recipients follow from mail).
func clientOperations(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("web/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, methods := range doc.Paths {
		for method, body := range methods {
			if !slices.Contains([]string{"get", "post", "put", "patch", "delete"}, method) {
				continue
			}
			var op struct {
				ID     string `json:"operationId"`
				Client *bool  `json:"x-client"`
			}
			if err := json.Unmarshal(body, &op); err != nil {
				t.Fatal(err)
			}
			if op.ID == "" {
				t.Errorf("an operation of %s has no operationId", method)
			}
			if op.Client == nil || *op.Client {
				ops = append(ops, op.ID)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// clientLanguages are the first-party client libraries (clients/<lang>).
var clientLanguages = []string{"go", "java", "node", "php", "python", "ruby"}

// Every client library keeps a map from operation to its method
// (clients/<lang>/operations.json); one that lacks an operation of the
// document, or names one the document does not have, fails.
func TestClientLibrariesCoverEveryOperation(t *testing.T) {
	ops := clientOperations(t)
	if len(ops) < 40 {
		t.Fatalf("only %d client operations in web/openapi.json", len(ops))
	}
	for _, lang := range clientLanguages {
		path := filepath.Join("clients", lang, "operations.json")
		raw, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			t.Errorf("clients/%s has no operations.json: the %s library is missing", lang, lang)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var methods map[string]string
		if err := json.Unmarshal(raw, &methods); err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		for _, op := range ops {
			if methods[op] == "" {
				t.Errorf("%s: operation %s has no method", path, op)
			}
		}
		for op := range methods {
			if !slices.Contains(ops, op) {
				t.Errorf("%s: %s is not a client operation of web/openapi.json", path, op)
			}
		}
	}
}

// The client libraries read MAILBOLT_API_KEY, MAILBOLT_BASE_URL and
// MAILBOLT_CA_FILE; no flag of any command may map to those names
// (applyEnv's MAILBOLT_<FLAG>), or setting one for a client would change
// the server too.
func TestNoFlagTakesAClientVariable(t *testing.T) {
	reserved := []string{"MAILBOLT_API_KEY", "MAILBOLT_BASE_URL", "MAILBOLT_CA_FILE"}
	var visit func(cmd *cobra.Command)
	checked := 0
	visit = func(cmd *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				checked++
				name := "MAILBOLT_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
				if slices.Contains(reserved, name) {
					t.Errorf("mailbolt %s --%s maps to %s, a client library's variable", cmd.CommandPath(), f.Name, name)
				}
			})
		}
		for _, c := range cmd.Commands() {
			visit(c)
		}
	}
	visit(newRootCommand())
	if checked < 50 {
		t.Fatalf("only %d flags seen", checked)
	}
}

// Every operation of the document has an operationId, and only the
// document itself and the routes recipients follow from mail are left out
// of the client libraries.
func TestClientOperationsOfTheDocument(t *testing.T) {
	ops := clientOperations(t)
	for _, left := range []string{"getOpenAPI", "trackOpen", "trackClick", "unsubscribe", "unsubscribePage", "invitationPage", "acceptInvitation"} {
		if slices.Contains(ops, left) {
			t.Errorf("%s should be marked x-client: false", left)
		}
	}
	if !slices.Contains(ops, "sendMessage") || len(ops) != 58 {
		t.Errorf("%d client operations: %v", len(ops), ops)
	}
}

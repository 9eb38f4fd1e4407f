package mailbolt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestOperationsMap checks operations.json against the OpenAPI document
// (every operation not marked "x-client": false, no other) and against the
// Client (every named method exists).
func TestOperationsMap(t *testing.T) {
	var ops map[string]string
	data, err := os.ReadFile("operations.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &ops); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "web", "openapi.json"))
	if err != nil {
		t.Skipf("no OpenAPI document beside the client: %v", err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, methods := range doc.Paths {
		for _, op := range methods {
			var o struct {
				OperationID string `json:"operationId"`
				Client      *bool  `json:"x-client"`
			}
			if json.Unmarshal(op, &o) != nil || o.OperationID == "" || (o.Client != nil && !*o.Client) {
				continue
			}
			want[o.OperationID] = true
		}
	}
	for id := range want {
		if ops[id] == "" {
			t.Errorf("operation %s is missing from operations.json", id)
		}
	}
	c, err := New(Options{BaseURL: "http://127.0.0.1:1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for id, name := range ops {
		if !want[id] {
			t.Errorf("operations.json names %s, which is not a client operation", id)
		}
		parts := strings.Split(name, ".")
		if len(parts) != 3 || parts[0] != "client" {
			t.Errorf("%s: %q is not client.Service.Method", id, name)
			continue
		}
		svc := reflect.ValueOf(c).Elem().FieldByName(parts[1])
		if !svc.IsValid() || !svc.MethodByName(parts[2]).IsValid() {
			t.Errorf("%s: %s does not exist", id, name)
		}
	}
}

package mailbolt

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Raw hands back the answer's bytes as they are: a message is not JSON.
func TestInboundRawReturnsTheBytes(t *testing.T) {
	msg := "From: a@example.test\r\nSubject: hi\r\n\r\n{not json\r\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/inbound/messages/m1/raw" || r.Header.Get("X-API-Key") != "k" {
			http.Error(w, `{"error":{"code":"NOT_FOUND","message":"no"}}`, 404)
			return
		}
		w.Header().Set("Content-Type", "message/rfc822")
		w.Write([]byte(msg))
	}))
	defer srv.Close()
	c, err := New(Options{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.Inbound.Raw(context.Background(), "m1")
	if err != nil || string(raw) != msg {
		t.Fatalf("raw %q %v", raw, err)
	}
}

package web

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 document of the v1 API: the source of truth
// that the tests hold every route and response to.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request, _ *call) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	w.Write(OpenAPI)
}

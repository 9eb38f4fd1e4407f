package web

import (
	"net/http"
	"testing"
)

func checkOpenAPI(t testing.TB, req *http.Request, resp *http.Response, body []byte) {}

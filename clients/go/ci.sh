#!/usr/bin/env bash
# The Go client's suite against a fresh server (clients/harness.sh). Go is
# already installed; nothing else is needed.
set -euo pipefail
cd "$(dirname "$0")"
test -z "$(gofmt -l .)" || { echo "gofmt:"; gofmt -l .; exit 1; }
go vet ./...
exec ../harness.sh go test -count=1 -timeout 120s ./...

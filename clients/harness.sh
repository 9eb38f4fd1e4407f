#!/usr/bin/env bash
# Runs a command against a fresh Mailbolt server, for the client libraries'
# test suites: builds the binary once (into $MAILBOLT_HARNESS_BIN, default
# clients/.bin/mailbolt), starts `serve` on a temporary data dir and free
# loopback ports, and runs the command with these variables set:
#
#   MAILBOLT_BASE_URL            http://127.0.0.1:<port>
#   MAILBOLT_API_KEY             a live key with scope *
#   MAILBOLT_TEST_API_KEY        a test (sandbox) key with scope *
#   MAILBOLT_NARROW_API_KEY      a live key with scope account:read only (403s)
#   MAILBOLT_LIMITED_API_KEY     a key of an account limited to 1 request/s (429s)
#   MAILBOLT_OTHER_API_KEY       a key of another account (404s across tenants)
#   MAILBOLT_WEBHOOK_VECTOR      testdata/webhooks/signature.json
#
# The server is stopped when the command ends; the exit status is the
# command's. Usage: clients/harness.sh COMMAND [ARG...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${MAILBOLT_HARNESS_BIN:-$root/clients/.bin/mailbolt}"
if [ ! -x "$bin" ] || [ -n "$(find "$root" \( -name '*.go' -o -name default.pgo \) -newer "$bin" -not -path '*/clients/*' -print -quit)" ]; then
  mkdir -p "$(dirname "$bin")"
  (cd "$root" && go build -o "$bin" .)
fi
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$bin" serve --data-dir "$work/data" --http-addr 127.0.0.1:0 --smtp-addr 127.0.0.1:0 --metrics-addr "" \
  --hostname mta.mailbolt.test --dev >"$work/out" 2>"$work/err" &
server_pid=$!
for _ in $(seq 1 200); do
  grep -q 'listening on http://' "$work/out" 2>/dev/null && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "harness: mailbolt serve exited:" >&2
    cat "$work/err" >&2
    exit 1
  fi
  sleep 0.05
done
base="$(sed -n 's/.*listening on \(http:\/\/[^ ]*\).*/\1/p' "$work/out" | head -1)"
live="$(sed -n 's/.*live key: \(svc_live_[A-Za-z0-9_-]*\).*/\1/p' "$work/out" | head -1)"
test_key="$(sed -n 's/.*test key: \(svc_test_[A-Za-z0-9_-]*\).*/\1/p' "$work/out" | head -1)"
if [ -z "$base" ] || [ -z "$live" ] || [ -z "$test_key" ]; then
  echo "harness: serve did not print its address and keys:" >&2
  cat "$work/out" "$work/err" >&2
  exit 1
fi
admin() { "$bin" "$@" --data-dir "$work/data" | tail -1; }
default_account="$("$bin" accounts list --data-dir "$work/data" | awk 'NR>1 && $2=="default" {print $1}')"
narrow="$(admin keys create --account "$default_account" --name narrow --scopes account:read)"
limited_account="$(admin accounts create --name limited --rate-limit 1)"
limited="$(admin keys create --account "$limited_account" --name limited)"
other_account="$(admin accounts create --name other)"
other="$(admin keys create --account "$other_account" --name other)"

export MAILBOLT_BASE_URL="$base" MAILBOLT_API_KEY="$live" MAILBOLT_TEST_API_KEY="$test_key" \
  MAILBOLT_NARROW_API_KEY="$narrow" MAILBOLT_LIMITED_API_KEY="$limited" MAILBOLT_OTHER_API_KEY="$other" \
  MAILBOLT_WEBHOOK_VECTOR="$root/testdata/webhooks/signature.json"
status=0
"$@" || status=$?
if [ "$status" -ne 0 ]; then
  echo "harness: the command failed ($status); the server's log ends:" >&2
  tail -20 "$work/err" >&2
fi
exit "$status"

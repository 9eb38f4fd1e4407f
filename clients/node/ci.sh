#!/usr/bin/env bash
# The Node.js client's suite against a fresh server (clients/harness.sh builds and starts it).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v node >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq nodejs >/dev/null
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
  echo "clients/node: Node.js 20 or newer is needed, found $(node --version)" >&2
  exit 1
fi
# Serially: the 429 test spends the limited key's budget, and one server serves every test.
exec ../harness.sh node --test --test-concurrency=1 --test-reporter=spec test/

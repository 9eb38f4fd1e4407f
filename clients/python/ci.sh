#!/usr/bin/env bash
# The Python client's suite against a fresh Mailbolt server (clients/harness.sh builds
# and starts it). Standard library only: python3 is all it needs.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v python3 >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq python3 >/dev/null
fi
export PYTHONDONTWRITEBYTECODE=1
exec ../harness.sh python3 -m unittest discover -s tests -t . "$@"

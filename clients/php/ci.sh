#!/usr/bin/env bash
# The PHP client's suite against a fresh server: installs php-cli and phpunit
# (Debian) when missing, then runs PHPUnit through clients/harness.sh.
set -euo pipefail
cd "$(dirname "$0")"
missing=()
command -v php >/dev/null 2>&1 || missing+=(php-cli)
command -v phpunit >/dev/null 2>&1 || missing+=(phpunit)
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update
  apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}"
fi
exec ../harness.sh phpunit --configuration phpunit.xml.dist

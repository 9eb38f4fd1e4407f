#!/usr/bin/env bash
# The Ruby client's suite against a fresh server (clients/harness.sh builds and
# starts it). Installs Ruby from Debian only when it is missing.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v ruby >/dev/null 2>&1 || ! ruby -e 'require "minitest/autorun"' >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq ruby >/dev/null
  ruby -e 'require "minitest/autorun"' >/dev/null 2>&1 || apt-get install -y -qq ruby-minitest >/dev/null
fi
exec ../harness.sh ruby -w -Ilib -e 'Dir["test/*_test.rb"].sort.each { |f| require File.expand_path(f) }'

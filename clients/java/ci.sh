#!/usr/bin/env bash
# The Java client's suite: compiles the library and its tests with javac, then runs JUnit 5's
# console launcher against a fresh server through clients/harness.sh. Installs the JDK and
# JUnit 5 from Debian only when they are missing (no network build tool is used).
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
launcher=/usr/share/java/junit-platform-console-standalone.jar
[ -f "$launcher" ] || need+=(junit5)
if [ ${#need[@]} -gt 0 ]; then
  echo "ci.sh: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
[ -f "$launcher" ] || launcher="$(dpkg -L junit5 | grep 'console-standalone.*\.jar$' | head -1)"

rm -rf build/classes build/test-classes
javac --release 17 -Xlint:all -Werror -d build/classes $(find src/main/java -name '*.java')
javac --release 17 -nowarn -d build/test-classes -cp "build/classes:$launcher" $(find src/test/java -name '*.java')
examples/run build   # so the suite's examples/run calls do not compile

exec ../harness.sh java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -jar "$launcher" \
  --class-path build/classes:build/test-classes --scan-class-path build/test-classes \
  --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests

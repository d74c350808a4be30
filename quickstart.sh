#!/usr/bin/env bash
# Runs Stockade on embedded defaults: the memory fence store journaled under ./stockade-data, fencing
# PUT and DELETE of /files/{path...} on the local directory ./stockade-data/files (policies/examples/quickstart.yaml).
# Builds the proxy first if needed. Extra arguments go to the proxy (e.g. --port 9090).
set -euo pipefail
cd "$(dirname "$0")"
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven
jar=proxy/target/stockade-proxy.jar
if [ ! -f "$jar" ] || [ -n "$(find policies/src proxy/src pom.xml policies/pom.xml proxy/pom.xml -newer "$jar" -print -quit)" ]; then
  echo "stockade: building the proxy (mvn package, tests skipped)..." >&2
  mvn -B -q -Dstyle.color=never -DskipTests package -pl policies,conformance-checker,proxy -am
fi
exec "$JAVA_HOME/bin/java" -jar "$jar" --config policies/examples/quickstart.yaml "$@"

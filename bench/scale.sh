#!/usr/bin/env bash
# The memory store at scale: heap per scope and journal replay time for N scopes (default 10 million) in a 1 GiB
# heap (HEAP=2g for another); with "cache", the token cache's heap per scope instead (give it HEAP=2g).
# JAVA_OPTS adds JVM options (e.g. -XX:+UseTransparentHugePages). Usage: bench/scale.sh [scopes] [cache]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven
mvn -B -q -pl policies,conformance-checker,proxy -am test-compile dependency:build-classpath \
    -Dmdep.outputFile=target/scale.cp -Dmdep.includeScope=test >/dev/null
exec "$JAVA_HOME/bin/java" "-Xmx${HEAP:-1g}" ${JAVA_OPTS:-} -cp "proxy/target/test-classes:proxy/target/classes:policies/target/classes:$(cat proxy/target/scale.cp)" \
    io.stockade.proxy.store.memory.JournalBench scale "${1:-10000000}" ${2:-}

#!/usr/bin/env bash
# JMH microbenchmarks of the hot path (benchmarks/): fence decision in memory, stale rejections (memory store and
# token cache), token parsing, route matching. Extra arguments go to JMH (e.g. -f 1 -wi 2 -i 3, or a name regex).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven
mvn -B -q -DskipTests install -pl policies,conformance-checker,proxy,benchmarks -am >/dev/null
mvn -B -q -pl benchmarks dependency:build-classpath -Dmdep.outputFile=target/jmh.cp >/dev/null
exec "$JAVA_HOME/bin/java" -cp "benchmarks/target/classes:$(cat benchmarks/target/jmh.cp)" org.openjdk.jmh.Main "$@"

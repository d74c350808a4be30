#!/usr/bin/env bash
# Fenced writes through Stockade's postgres backend vs the same bare UPDATE over JDBC, in one run.
# Needs PostgreSQL at 127.0.0.1:5432 (trust auth, database 'test'). Usage: bench/postgres.sh [writers] [seconds] [warmup]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk
mvn -B -q -o -pl policies,proxy -am test-compile dependency:build-classpath -Dmdep.outputFile=target/bench.cp \
    -Dmdep.includeScope=test >/dev/null
java -cp "proxy/target/test-classes:proxy/target/classes:policies/target/classes:$(cat proxy/target/bench.cp)" \
    -Djava.util.logging.config.file=/dev/null io.stockade.proxy.bench.PostgresBench "$@"

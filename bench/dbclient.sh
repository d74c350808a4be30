#!/usr/bin/env bash
# The postgres backend's fenced write through plain JDBC (as the backend sends it, COMMIT separate or pipelined) and
# through Helidon DbClient, side by side on one pool, alternating in one run (benchmarks/DbClientComparison.java).
# Needs PostgreSQL at 127.0.0.1:5432 (trust auth); uses database stockade_bench.
#
#   bench/dbclient.sh                 # 8 writers, 8 s per way, 2 rounds
#   WRITERS=32 SECONDS_EACH=10 ROUNDS=3 bench/dbclient.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven
db=stockade_bench
psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $db"
mvn -B -q -DskipTests install -pl policies,conformance-checker,proxy,benchmarks -am >/dev/null
mvn -B -q -pl benchmarks dependency:build-classpath -Dmdep.outputFile=target/bench.cp >/dev/null
exec "$JAVA_HOME/bin/java" -cp "benchmarks/target/classes:$(cat benchmarks/target/bench.cp)" \
  io.stockade.bench.DbClientComparison "jdbc:postgresql://127.0.0.1:5432/$db" "${WRITERS:-8}" "${SECONDS_EACH:-8}" \
  "${ROUNDS:-2}"

#!/usr/bin/env bash
# PutObject/GetObject of 4 KiB and 4 MiB objects through Stockade's S3 backend vs straight to the same in-process
# s3proxy 3.0.0, in one run, ratios printed. Needs nothing running. Usage: bench/s3.sh [threads] [seconds] [warmup]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk
mvn -B -q -o -pl policies,conformance-checker,proxy -am test-compile dependency:build-classpath \
    -Dmdep.outputFile=target/bench.cp -Dmdep.includeScope=test >/dev/null
java -cp "proxy/target/test-classes:proxy/target/classes:policies/target/classes:$(cat proxy/target/bench.cp)" \
    -Djava.util.logging.config.file=/dev/null io.stockade.proxy.bench.S3Bench "$@"

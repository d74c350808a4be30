#!/usr/bin/env bash
# The fault harness (proxy's FaultHarnessIT, issue 46) for as long as asked: writers with rising tokens and zombies
# write through the proxy to rclone's WebDAV server (storage that writes as it reads) while the harness cuts the
# storage, the etcd or postgres fence store or the etcd lock service (real locks, a verifier) off the network (network
# namespaces of its own, every packet dropped both ways)
# and fills the fence journal's disk (a tmpfs of its own), then heals each; after every fault a write must be
# acknowledged again within settle + 5 s, and at the end the history checker (conformance-checker) judges each run.
#
#   scripts/fault-harness.sh [SECONDS]        fault time of each topology, default 600 (CI runs 8)
#
# Needs root (the namespaces and the tmpfs), iproute2 (ip, tc), rclone, etcd, PostgreSQL 15, mount and e2fsprogs.
# Prints each run's summary line (faults, how long each took to heal, the answers, the checker's verdict).
# Exit code: Maven's.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
case $seconds in
  '' | *[!0-9]*) echo "usage: scripts/fault-harness.sh [SECONDS]" >&2; exit 2 ;;
esac
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
status=0
mvn -B -q verify -pl policies,test-tools,conformance-checker,proxy -am -Dstockade.quick -Dtest=none -Dit.test=FaultHarnessIT \
  -Dsurefire.failIfNoSpecifiedTests=false -Dfailsafe.failIfNoSpecifiedTests=false \
  "-Dstockade.test.jvm=-XX:+UseSerialGC -Dstockade.harness.seconds=$seconds" || status=$?
grep -h "fault harness:" proxy/target/failsafe-reports/io.stockade.proxy.harness.FaultHarnessIT-output.txt || true
exit $status

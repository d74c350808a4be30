#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian machine with a JDK 21+: installs or starts what the tests need,
# then builds every module and runs every test (unit tests *Test, integration tests *IT against real servers).
set -euo pipefail
cd "$(dirname "$0")"
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven
echo "stockade: JDK $(stockade_jdk_major "$JAVA_HOME") at $JAVA_HOME" >&2
command -v mvn >/dev/null || { echo "stockade: Maven is missing: apt-get install maven" >&2; exit 1; }
# PostgreSQL at 127.0.0.1:5432 (trust auth, database 'test') for the postgres backend and store tests.
if ! pg_isready -q -h 127.0.0.1 2>/dev/null; then
  ls /etc/postgresql/*/main >/dev/null 2>&1 || { echo "stockade: PostgreSQL is not installed: apt-get install postgresql" >&2; exit 1; }
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start
  for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 && break; sleep 0.2; done
  pg_isready -q -h 127.0.0.1 || { echo "stockade: PostgreSQL did not start at 127.0.0.1:5432" >&2; exit 1; }
fi
# etcd (Debian etcd-server) for the etcd fence store tests; the tests start their own members on free ports.
if ! command -v etcd >/dev/null; then
  echo "stockade: etcd not found, installing etcd-server" >&2
  { apt-get update && apt-get install -y etcd-server; } >&2 \
    || { echo "stockade: could not install etcd-server (run as root: apt-get install -y etcd-server);" \
              "the etcd tests will be skipped" >&2; }
fi
mvn -B -ntp verify "$@"

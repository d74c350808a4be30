#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian machine with a JDK 21+ and Maven: installs or starts what the tests
# need (PostgreSQL, PgBouncer, etcd, redis-server, HAProxy, nginx, the AWS CLI, boto3, rclone, chromium, dynalite,
# the AWS SDK for JavaScript, promtool), then builds every module and runs every test (unit tests *Test,
# integration tests *IT against real servers).
set -euo pipefail
cd "$(dirname "$0")"
# The proxies the tests start refuse a non-UTF-8 locale (file names); a CI runner's bare environment may be POSIX.
export LC_ALL=C.UTF-8
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven
echo "stockade: JDK $(stockade_jdk_major "$JAVA_HOME") at $JAVA_HOME" >&2
command -v mvn >/dev/null || { echo "stockade: Maven is missing: apt-get install maven" >&2; exit 1; }
# PostgreSQL at 127.0.0.1:5432 (trust auth for loopback, database 'test') for the postgres backend, store and
# lease tests: installed when missing, started when stopped.
if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  echo "stockade: PostgreSQL not found, installing it (Debian package postgresql)" >&2
  { apt-get update && apt-get install -y postgresql; } >&2 \
    || { echo "stockade: could not install PostgreSQL (run as root: apt-get install -y postgresql)" >&2; exit 1; }
  hba="/etc/postgresql/$(ls /etc/postgresql | sort -V | tail -1)/main/pg_hba.conf"
  sed -i 's/^\(host\s\+all\s\+all\s\+127.0.0.1\/32\s\+\)\S\+/\1trust/; s/^\(local\s\+all\s\+all\s\+\)\S\+/\1trust/' "$hba"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main reload 2>/dev/null || true
fi
if ! pg_isready -q -h 127.0.0.1 2>/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start || true
  for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 && break; sleep 0.2; done
  pg_isready -q -h 127.0.0.1 || { echo "stockade: PostgreSQL did not start at 127.0.0.1:5432" >&2; exit 1; }
fi
psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE test" >&2
# etcd (Debian etcd-server) for the etcd fence store tests; the tests start their own members on free ports.
if ! command -v etcd >/dev/null; then
  echo "stockade: etcd not found, installing etcd-server" >&2
  { apt-get update && apt-get install -y etcd-server; } >&2 \
    || { echo "stockade: could not install etcd-server (run as root: apt-get install -y etcd-server);" \
              "the etcd tests will be skipped" >&2; }
fi
# HAProxy and nginx (Debian haproxy, nginx-light) for FrontProxySmugglingIT, which starts its own instances on free
# loopback ports in front of the proxy (nothing is started here).
if ! command -v haproxy >/dev/null && [ ! -x /usr/sbin/haproxy ]; then
  echo "stockade: haproxy not found, installing haproxy" >&2
  { apt-get update && apt-get install -y haproxy; } >&2 \
    || { echo "stockade: could not install haproxy (run as root: apt-get install -y haproxy);" \
              "FrontProxySmugglingIT will be skipped" >&2; }
fi
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  echo "stockade: nginx not found, installing nginx-light" >&2
  { apt-get update && apt-get install -y nginx-light; } >&2 \
    || { echo "stockade: could not install nginx-light (run as root: apt-get install -y nginx-light);" \
              "FrontProxySmugglingIT will be skipped" >&2; }
fi
# redis-server (Debian's, built with TLS) for the Redis lease provider, verifier and failover tests; the tests start
# their own servers on free ports (skipped, saying so, when the binary is missing).
if ! command -v redis-server >/dev/null; then
  echo "stockade: redis-server not found, installing it" >&2
  { apt-get update && apt-get install -y redis-server; } >&2 \
    || { echo "stockade: could not install redis-server (run as root: apt-get install -y redis-server);" \
              "the Redis tests will be skipped" >&2; }
fi
# The AWS CLI (Debian awscli, v2), boto3 (python3-boto3) and rclone for S3CliIT and S3RcloneIT, which run them as
# processes against the proxy (nothing is started here).
if [ ! -x /usr/bin/aws ] || ! /usr/bin/python3 -c 'import boto3' 2>/dev/null || [ ! -x /usr/bin/rclone ]; then
  echo "stockade: the AWS CLI, boto3 or rclone not found, installing awscli, python3-boto3 and rclone" >&2
  { apt-get update && apt-get install -y awscli python3-boto3 rclone; } >&2 \
    || { echo "stockade: could not install awscli python3-boto3 rclone (run as root: apt-get install -y" \
              "awscli python3-boto3 rclone); S3CliIT and S3RcloneIT will be skipped" >&2; }
fi
# The AWS CLI v1 (Python's awscli 1.x; Debian 12's is v2) for S3CliDocIT, which runs docs/s3.md's plugin
# configuration for each major version as written: into .tools/awscli-v1 (a venv, ignored by git) unless an aws on
# the PATH is v1 already.
if ! { command -v aws >/dev/null && aws --version 2>&1 | grep -q '^aws-cli/1\.'; } \
    && [ ! -x .tools/awscli-v1/bin/aws ]; then
  echo "stockade: no AWS CLI v1 found, installing awscli 1.x into .tools/awscli-v1 (python3 -m venv, pip)" >&2
  { /usr/bin/python3 -m venv --help >/dev/null 2>&1 || { apt-get update && apt-get install -y python3-venv; }; } >&2
  { /usr/bin/python3 -m venv .tools/awscli-v1 && .tools/awscli-v1/bin/pip install -q awscli==1.45.11; } >&2 \
    || echo "stockade: could not install awscli 1.x (python3 -m venv .tools/awscli-v1 &&" \
            ".tools/awscli-v1/bin/pip install awscli==1.45.11); S3CliDocIT will fail under CI" >&2
fi
# Debian's chromium (headless) draws the conformance suite's HTML report in ConformanceIT.
if [ ! -x /usr/bin/chromium ]; then
  echo "stockade: chromium not found, installing it (for the HTML report's browser test)" >&2
  { apt-get update && apt-get install -y chromium; } >&2 \
    || { echo "stockade: could not install chromium (run as root: apt-get install -y chromium)" >&2; exit 1; }
fi
# dynalite (npm package 4.0.0: a DynamoDB API server on LevelDB, in memory in the tests) for the DynamoDB lease
# provider and verifier tests: installed into .tools/dynalite (ignored by git) with the machine's Node.js; the tests
# start their own servers on free loopback ports (skipped, saying so, when it is missing).
if [ ! -f .tools/dynalite/node_modules/dynalite/cli.js ]; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "stockade: Node.js not found, installing nodejs and npm (for dynalite)" >&2
    { apt-get update && apt-get install -y nodejs npm; } >&2 \
      || echo "stockade: could not install nodejs npm; the DynamoDB tests will be skipped" >&2
  fi
  if command -v npm >/dev/null; then
    echo "stockade: installing dynalite 4.0.0 into .tools/dynalite" >&2
    npm install --prefix .tools/dynalite --no-audit --no-fund --loglevel=error dynalite@4.0.0 >&2 \
      || echo "stockade: could not install dynalite (npm install dynalite@4.0.0); the DynamoDB tests will be" \
              "skipped" >&2
  fi
fi
# PgBouncer (Debian pgbouncer) for the PostgreSQL tests behind a transaction-pooling pooler (PgBouncerIT,
# PgBouncerSdkIT); the tests start their own on free loopback ports (the package's service is not needed).
if [ ! -x /usr/sbin/pgbouncer ]; then
  echo "stockade: pgbouncer not found, installing it" >&2
  { apt-get update && apt-get install -y pgbouncer; } >&2 \
    || echo "stockade: could not install pgbouncer (run as root: apt-get install -y pgbouncer); the PgBouncer" \
            "tests will be skipped" >&2
fi
# promtool (Debian prometheus) checks and unit-tests the shipped alert rules (DeployFilesIT).
if ! command -v promtool >/dev/null; then
  echo "stockade: promtool not found, installing prometheus (for promtool)" >&2
  { apt-get update && apt-get install -y prometheus; } >&2 \
    || echo "stockade: could not install prometheus (run as root: apt-get install -y prometheus)" >&2
fi
# The AWS SDK for JavaScript v3 (npm packages @aws-sdk/client-s3, lib-storage, s3-request-presigner) for S3JsSdkIT,
# which runs Node.js scripts with it against the proxy: installed into .tools/aws-sdk-js (ignored by git) with the
# machine's Node.js (skipped, saying so, when it is missing).
if [ ! -f .tools/aws-sdk-js/node_modules/@aws-sdk/client-s3/package.json ] \
    || [ ! -f .tools/aws-sdk-js/node_modules/@aws-sdk/lib-storage/package.json ] \
    || [ ! -f .tools/aws-sdk-js/node_modules/@aws-sdk/s3-request-presigner/package.json ]; then
  if command -v npm >/dev/null; then
    echo "stockade: installing the AWS SDK for JavaScript v3 into .tools/aws-sdk-js" >&2
    npm install --prefix .tools/aws-sdk-js --no-audit --no-fund --loglevel=error @aws-sdk/client-s3@3.1175.0 \
        @aws-sdk/lib-storage@3.1175.0 @aws-sdk/s3-request-presigner@3.1169.0 >&2 \
      || echo "stockade: could not install the AWS SDK for JavaScript v3 (npm install --prefix .tools/aws-sdk-js" \
              "@aws-sdk/client-s3 @aws-sdk/lib-storage @aws-sdk/s3-request-presigner); S3JsSdkIT will be skipped" >&2
  else
    echo "stockade: npm not found; S3JsSdkIT will be skipped (apt-get install -y nodejs npm)" >&2
  fi
fi
# openssl makes the throwaway CA and certificates of the TLS tests (testing/TestPki).
if ! command -v openssl >/dev/null; then
  echo "stockade: openssl not found, installing it" >&2
  { apt-get update && apt-get install -y openssl; } >&2 \
    || { echo "stockade: could not install openssl (run as root: apt-get install -y openssl)" >&2; exit 1; }
fi
# A Java older than 21 (Debian's openjdk-17-jre-headless) for OldJavaIT and LauncherIT: what the jar and the
# launcher tell a user whose java is too old.
older_java=""
for home in /usr/lib/jvm/*; do
  v=$(stockade_jdk_major "$home" 2>/dev/null || echo 0)
  if [ -x "$home/bin/java" ] && [ "${v:-0}" -gt 0 ] && [ "$v" -lt 21 ]; then older_java=$home; fi
done
if [ -z "$older_java" ]; then
  echo "stockade: no Java older than 21 under /usr/lib/jvm, installing openjdk-17-jre-headless (OldJavaIT)" >&2
  { apt-get update && apt-get install -y openjdk-17-jre-headless; } >&2 \
    || echo "stockade: could not install openjdk-17-jre-headless; OldJavaIT will be skipped" >&2
fi
mvn -B -ntp verify "$@"

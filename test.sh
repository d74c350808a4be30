#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian machine with a JDK 21+ and Maven: installs or starts what the tests
# need (PostgreSQL, PgBouncer, etcd, redis-server, HAProxy, nginx, the AWS CLI v2 and v1, boto3, rclone, s3cmd,
# restic, chromium, dynalite, the AWS SDK for JavaScript, psql, psycopg2, node-postgres, promtool, openssl, a Java older than 21), then
# builds every module and runs every test (unit tests *Test, integration tests *IT against real servers). The Debian packages that are missing
# are installed in one apt-get run (one 'apt-get update', none when nothing is missing).
set -euo pipefail
cd "$(dirname "$0")"
# The proxies the tests start refuse a non-UTF-8 locale (file names); a CI runner's bare environment may be POSIX.
export LC_ALL=C.UTF-8
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven
echo "stockade: JDK $(stockade_jdk_major "$JAVA_HOME") at $JAVA_HOME" >&2
command -v mvn >/dev/null || { echo "stockade: Maven is missing: apt-get install maven" >&2; exit 1; }

# ---- what is missing, as Debian packages: package, then why (the tests that need it)
missing=()
need() { # $1 = package(s), $2 = why
  echo "stockade: $2 not found: will install $1" >&2
  # shellcheck disable=SC2206 # a list of packages
  missing+=($1)
}
# PostgreSQL at 127.0.0.1:5432 (trust auth for loopback, database 'test') for the postgres backend, store and
# lease tests: installed when missing, started when stopped.
ls /etc/postgresql/*/main >/dev/null 2>&1 || need postgresql "PostgreSQL"
# etcd (Debian etcd-server) for the etcd fence store tests; the tests start their own members on free ports.
command -v etcd >/dev/null || need etcd-server "etcd"
# HAProxy and nginx (Debian haproxy, nginx-light) for FrontProxySmugglingIT and WebDavIT, which start their own
# instances on free loopback ports (nothing is started here).
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need haproxy "HAProxy"
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need nginx-light "nginx"
# redis-server (Debian's, built with TLS) for the Redis lease provider, verifier and failover tests; the tests start
# their own servers on free ports.
command -v redis-server >/dev/null || need redis-server "redis-server"
# The AWS CLI (Debian awscli, v2), boto3 (python3-boto3) and rclone for S3CliIT and S3RcloneIT, run as processes.
[ -x /usr/bin/aws ] || need awscli "the AWS CLI v2 (/usr/bin/aws)"
/usr/bin/python3 -c 'import boto3' 2>/dev/null || need python3-boto3 "boto3"
[ -x /usr/bin/rclone ] || need rclone "rclone"
# s3cmd and restic for S3CmdIT and S3ResticIT (docs/s3.md, "s3cmd" and "restic"), run as processes.
[ -x /usr/bin/s3cmd ] || need s3cmd "s3cmd"
[ -x /usr/bin/restic ] || need restic "restic"
# Debian's chromium (headless) draws the conformance suite's HTML report in ConformanceBackendsIT.
[ -x /usr/bin/chromium ] || need chromium "chromium"
# Node.js and npm for dynalite (the DynamoDB tests) and the AWS SDK for JavaScript (S3JsSdkIT), installed below.
{ command -v node >/dev/null && command -v npm >/dev/null; } || need "nodejs npm" "Node.js and npm"
# PgBouncer (Debian pgbouncer) for PgBouncerIT and PgBouncerSdkIT; the tests start their own on free ports.
[ -x /usr/sbin/pgbouncer ] || need pgbouncer "pgbouncer"
# The SQL clients SqlClientsIT drives through the PostgreSQL listener: psql (Debian postgresql-client) and psycopg2
# (Debian python3-psycopg2); node-postgres is installed below.
command -v psql >/dev/null || need postgresql-client "psql"
/usr/bin/python3 -c 'import psycopg2' 2>/dev/null || need python3-psycopg2 "psycopg2"
# promtool (Debian prometheus) checks and unit-tests the shipped alert rules (DeployFilesIT).
command -v promtool >/dev/null || need prometheus "promtool"
# openssl makes the throwaway CA and certificates of the TLS tests (testing/TestPki).
command -v openssl >/dev/null || need openssl "openssl"
# ip and tc (Debian iproute2): FaultHarnessIT cuts its storage off in a network namespace of its own, as root.
{ command -v tc >/dev/null || [ -x /usr/sbin/tc ] || [ -x /sbin/tc ]; } || need iproute2 "tc"
# mount, losetup (Debian mount) and mkfs.ext4, e2fsck (e2fsprogs): JournalHealIT makes a full tmpfs and an ext4 the
# kernel turns read-only, as root (testing/ScratchFilesystem).
{ command -v losetup >/dev/null || [ -x /usr/sbin/losetup ] || [ -x /sbin/losetup ]; } || need mount "losetup"
{ command -v mkfs.ext4 >/dev/null || [ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ]; } || need e2fsprogs "mkfs.ext4"
# A Java older than 21 (Debian's openjdk-17-jre-headless) for OldJavaIT and LauncherIT: what the jar and the
# launcher tell a user whose java is too old.
older_java=""
for home in /usr/lib/jvm/*; do
  v=$(stockade_jdk_major "$home" 2>/dev/null || echo 0)
  if [ -x "$home/bin/java" ] && [ "${v:-0}" -gt 0 ] && [ "$v" -lt 21 ]; then older_java=$home; fi
done
[ -n "$older_java" ] || need openjdk-17-jre-headless "a Java older than 21 under /usr/lib/jvm"
# The AWS CLI v1 (Python's awscli 1.x; Debian 12's is v2) for S3CliDocIT: a venv below needs python3-venv.
aws_v1=no
{ command -v aws >/dev/null && aws --version 2>&1 | grep -q '^aws-cli/1\.'; } && aws_v1=yes
[ -x .tools/awscli-v1/bin/aws ] && aws_v1=yes
if [ "$aws_v1" = no ] && ! /usr/bin/python3 -m venv --help >/dev/null 2>&1; then
  need python3-venv "python3's venv (for the AWS CLI v1)"
fi

if [ ${#missing[@]} -gt 0 ]; then
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"; } >&2 \
    || { echo "stockade: could not install ${missing[*]} (run as root: apt-get update && apt-get install -y" \
              "${missing[*]}); the tests that need them fail under CI=true, naming the tool" >&2; }
fi

# ---- PostgreSQL: trust on loopback when this script installed it, started when stopped, database 'test'
if [[ " ${missing[*]} " == *" postgresql "* ]] && ls /etc/postgresql/*/main >/dev/null 2>&1; then
  hba="/etc/postgresql/$(ls /etc/postgresql | sort -V | tail -1)/main/pg_hba.conf"
  sed -i 's/^\(host\s\+all\s\+all\s\+127.0.0.1\/32\s\+\)\S\+/\1trust/; s/^\(local\s\+all\s\+all\s\+\)\S\+/\1trust/' "$hba"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main reload 2>/dev/null || true
fi
ls /etc/postgresql/*/main >/dev/null 2>&1 \
  || { echo "stockade: PostgreSQL is missing (run as root: apt-get install -y postgresql)" >&2; exit 1; }
if ! pg_isready -q -h 127.0.0.1 2>/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start || true
  for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 && break; sleep 0.2; done
  pg_isready -q -h 127.0.0.1 || { echo "stockade: PostgreSQL did not start at 127.0.0.1:5432" >&2; exit 1; }
fi
psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE test" >&2

# ---- what is not a Debian package, into .tools/ (ignored by git)
# The AWS CLI v1 for S3CliDocIT, which runs docs/s3.md's plugin configuration for each major version as written:
# into a venv unless an aws on the PATH is v1 already.
if [ "$aws_v1" = no ]; then
  echo "stockade: no AWS CLI v1 found, installing awscli 1.x into .tools/awscli-v1 (python3 -m venv, pip)" >&2
  { /usr/bin/python3 -m venv .tools/awscli-v1 && .tools/awscli-v1/bin/pip install -q awscli==1.45.11; } >&2 \
    || echo "stockade: could not install awscli 1.x (python3 -m venv .tools/awscli-v1 &&" \
            ".tools/awscli-v1/bin/pip install awscli==1.45.11); S3CliDocIT will fail under CI" >&2
fi
# dynalite (npm package 4.0.0: a DynamoDB API server on LevelDB, in memory in the tests) for the DynamoDB lease
# provider and verifier tests; the tests start their own servers on free loopback ports.
if [ ! -f .tools/dynalite/node_modules/dynalite/cli.js ] && command -v npm >/dev/null; then
  echo "stockade: installing dynalite 4.0.0 into .tools/dynalite" >&2
  npm install --prefix .tools/dynalite --no-audit --no-fund --loglevel=error dynalite@4.0.0 >&2 \
    || echo "stockade: could not install dynalite (npm install dynalite@4.0.0); the DynamoDB tests will fail" \
            "under CI" >&2
fi
# The AWS SDK for JavaScript v3 (npm packages @aws-sdk/client-s3, lib-storage, s3-request-presigner) for S3JsSdkIT,
# which runs Node.js scripts with it against the proxy.
if { [ ! -f .tools/aws-sdk-js/node_modules/@aws-sdk/client-s3/package.json ] \
    || [ ! -f .tools/aws-sdk-js/node_modules/@aws-sdk/lib-storage/package.json ] \
    || [ ! -f .tools/aws-sdk-js/node_modules/@aws-sdk/s3-request-presigner/package.json ]; } \
    && command -v npm >/dev/null; then
  echo "stockade: installing the AWS SDK for JavaScript v3 into .tools/aws-sdk-js" >&2
  npm install --prefix .tools/aws-sdk-js --no-audit --no-fund --loglevel=error @aws-sdk/client-s3@3.1175.0 \
      @aws-sdk/lib-storage@3.1175.0 @aws-sdk/s3-request-presigner@3.1169.0 >&2 \
    || echo "stockade: could not install the AWS SDK for JavaScript v3 (npm install --prefix .tools/aws-sdk-js" \
            "@aws-sdk/client-s3 @aws-sdk/lib-storage @aws-sdk/s3-request-presigner); S3JsSdkIT will fail under CI" >&2
fi
# node-postgres (npm package pg) for SqlClientsIT, which runs Node.js scripts with it through the PostgreSQL listener.
if [ ! -f .tools/node-pg/node_modules/pg/package.json ] && command -v npm >/dev/null; then
  echo "stockade: installing node-postgres into .tools/node-pg" >&2
  npm install --prefix .tools/node-pg --no-audit --no-fund --loglevel=error pg@8.23.1 >&2 \
    || echo "stockade: could not install node-postgres (npm install --prefix .tools/node-pg pg@8.23.1);" \
            "SqlClientsIT will fail under CI" >&2
fi
mvn -B -ntp verify "$@"

#!/usr/bin/env bash
# Runs one of policies/examples with what it needs, on free loopback ports, each example's data in a directory of
# its own, and prints a session to try; Ctrl-C (or SIGTERM) stops everything it started.
#
#   scripts/example.sh http-upstream|observe|postgres|replicas|s3|sql     (also: ./quickstart.sh --example NAME)
#
#   http-upstream  policies/examples/http-upstream.yaml in front of two small HTTP stores that honour If-Match
#                  (scripts/example-upstream.java): 'documents' (serialized) and 'objects' (if-match, atomic)
#   observe        policies/examples/observe.yaml (observe mode: nothing refused, would-be refusals counted)
#                  in front of one such store
#   postgres       policies/examples/postgres-accounts.yaml on the machine's PostgreSQL (PGHOST, default
#                  127.0.0.1:5432; PGUSER, default postgres, must be able to create a database): a database
#                  stockade_example (created, schema and seed rows loaded) unless PGDATABASE names another
#   replicas       policies/examples/replicas.yaml: two replicas sharing one etcd (Debian's etcd-server, data in
#                  ./stockade-data/replicas/etcd) in front of one store that honours If-Match
#   s3             policies/examples/s3.yaml in front of s3proxy 3.0.0 (scripts/s3proxy.sh: its data under
#                  ./stockade-data/s3/s3proxy, the example's keys, a bucket 'reports'); signed requests (curl's
#                  --aws-sigv4, or the AWS CLI as docs/s3.md shows)
#   sql            policies/examples/sql.yaml: the PostgreSQL listener (docs/sql.md) in front of the machine's
#                  PostgreSQL (PGHOST, PGPORT, PGUSER as for postgres; PGUSER must be a superuser: 'sql install'
#                  creates a role and triggers), a database stockade_sql_example (STOCKADE_SQL_DATABASE: another
#                  name; dropped and created again every run either way) with the tables of
#                  policies/examples/sql.sql, an application role stockade_example_app that owns none of them
#                  (created if missing; no password: loopback trust, as for postgres), and 'sql install' run;
#                  the session is psql, one command a line
#
# Data: ./stockade-data/<example>/ (the journal, and s3proxy's and etcd's data), emptied at every start: each run
# starts from a clean state of its own, so the printed session gives the same answers every time (a journal kept
# from an earlier run would remember tokens that the new stores, in memory, do not: a first write answered 409).
# STOCKADE_JAVA_OPTS: extra options for every JVM the example starts (bin/stockade's, and the small HTTP store's).
# The postgres example recreates its database stockade_example too (a database named by PGDATABASE is kept, its
# schema and seed rows loaded again); the sql example recreates its database always. Ports: STOCKADE_PORT (free
# port by default), the stores' on free ports. The first line on standard output is "proxy: http://127.0.0.1:PORT".
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk >/dev/null

example=${1:-}
case "$example" in
  http-upstream|observe|postgres|replicas|s3|sql) ;;
  *) echo "usage: scripts/example.sh http-upstream|observe|postgres|replicas|s3|sql" >&2; exit 2 ;;
esac

pids=()
cleanup() {
  trap - EXIT
  trap '' INT TERM   # a second Ctrl-C or SIGTERM must not cut the cleanup short
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Build first (in the foreground, its progress shown), so that no store is left waiting on a first build.
bin/stockade build proxy

data="./stockade-data/$example"
rm -rf "$data"      # a clean state every run (see Data above)
mkdir -p "$data"
port=${STOCKADE_PORT:-$(stockade_free_port)}
export STOCKADE_PORT=$port

# Says on stderr what the example does now (a start can take minutes: a first run downloads s3proxy).
step() { echo "example: $*" >&2; }

# Waits until FILE has a line matching PATTERN, or the process PID ended (then prints FILE and fails); every 10 s
# it says it still waits, with the last line of FILE, so that a slow first start is never silent.
await_line() {
  local file=$1 pattern=$2 pid=$3 tries=0 limit=${4:-600}
  until grep -q "$pattern" "$file" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null || [ $((tries += 1)) -ge "$limit" ]; then
      echo "example: did not start:" >&2; cat "$file" >&2; exit 1
    fi
    if [ $((tries % 100)) -eq 0 ]; then
      step "still waiting ($((tries / 10)) s) for $file: $(tail -n 1 "$file" 2>/dev/null | cut -c1-100)"
    fi
    sleep 0.1
  done
}

start_upstream() {  # ports...
  step "starting a small HTTP store on port(s) $*"
  local opts
  read -r -a opts <<<"${STOCKADE_JAVA_OPTS:-}"   # as bin/stockade's JVMs: split on white space, never globbed
  "$JAVA_HOME/bin/java" "${opts[@]}" scripts/example-upstream.java "$@" > "$data/upstream.log" 2>&1 &
  pids+=($!)
  await_line "$data/upstream.log" "listening on http://127.0.0.1:${*: -1}" "$!"
}

case "$example" in
  http-upstream)
    docs=$(stockade_free_port); objects=$(stockade_free_port)
    start_upstream "$docs" "$objects"
    export DOCS_URL="http://127.0.0.1:$docs" OBJECTS_URL="http://127.0.0.1:$objects/store"
    config=policies/examples/http-upstream.yaml
    session="curl -i -X PUT -H 'Fencing-Token: 5' --data v5 http://127.0.0.1:$port/objects/b/report.txt   # 201
curl -i -X PUT -H 'Fencing-Token: 4' --data v4 http://127.0.0.1:$port/objects/b/report.txt   # 409 stale
curl http://127.0.0.1:$port/objects/b/report.txt                                          # v5
curl -i -X PUT -H 'Fencing-Token: 7' --data d http://127.0.0.1:$port/docs/acme/plan.md       # 201 (serialized:
   # a new journal opens at once; after a crash a serialized policy waits 60 s for writes that may be in flight)" ;;
  observe)
    upstream=$(stockade_free_port)
    start_upstream "$upstream"
    export UPSTREAM_URL="http://127.0.0.1:$upstream"
    config=policies/examples/observe.yaml
    session="curl -i -X PUT -H 'Fencing-Token: 5' --data v5 http://127.0.0.1:$port/reports/q3   # 201
curl -i -X PUT -H 'Fencing-Token: 4' --data v4 http://127.0.0.1:$port/reports/q3   # 204: forwarded, but counted
curl -s http://127.0.0.1:$port/metrics | grep would_reject                     # ... here" ;;
  postgres)
    export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres} PGDATABASE=${PGDATABASE:-stockade_example}
    if [ "$PGDATABASE" = stockade_example ]; then   # the example's own database: a clean one every run
      PGOPTIONS='-c client_min_messages=warning' psql -q -h "$PGHOST" -d postgres \
        -c 'DROP DATABASE IF EXISTS stockade_example WITH (FORCE)' >&2
    fi
    if ! psql -h "$PGHOST" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$PGDATABASE'" | grep -q 1; then
      psql -q -h "$PGHOST" -d postgres -c "CREATE DATABASE \"$PGDATABASE\"" >&2
    fi
    psql -q -h "$PGHOST" -v ON_ERROR_STOP=1 -f policies/examples/postgres-accounts.sql >&2
    config=policies/examples/postgres-accounts.yaml
    session="curl -i -X PUT -H 'Fencing-Token: 42' -d '{\"balance\": 120.50}' http://127.0.0.1:$port/accounts/acc-1/balance
curl -i -X PUT -H 'Fencing-Token: 41' -d '{\"balance\": 1}' http://127.0.0.1:$port/accounts/acc-1/balance   # 409
curl http://127.0.0.1:$port/accounts/acc-1          # the row
curl -i http://127.0.0.1:$port/accounts/nobody      # 404" ;;
  replicas)
    command -v etcd >/dev/null || { echo "example: etcd not found (apt-get install -y etcd-server)" >&2; exit 1; }
    client=$(stockade_free_port); peer=$(stockade_free_port); objects=$(stockade_free_port)
    step "starting etcd on 127.0.0.1:$client (data in $data/etcd)"
    etcd --name example --data-dir "$data/etcd" --listen-client-urls "http://127.0.0.1:$client" \
         --advertise-client-urls "http://127.0.0.1:$client" --listen-peer-urls "http://127.0.0.1:$peer" \
         --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "example=http://127.0.0.1:$peer" \
         > "$data/etcd.log" 2>&1 &
    pids+=($!)
    await_line "$data/etcd.log" "ready to serve client requests" "$!"
    start_upstream "$objects"
    export ETCD_ENDPOINTS="http://127.0.0.1:$client" OBJECTS_URL="http://127.0.0.1:$objects/store"
    config=policies/examples/replicas.yaml
    second=$(stockade_free_port)
    step "starting replica 2 on 127.0.0.1:$second (log $data/proxy-2.log)"
    STOCKADE_PORT=$second bin/stockade --config "$config" > "$data/proxy-2.log" 2>&1 &
    pids+=($!)
    await_line "$data/proxy-2.log" "Stockade listening" "$!"
    session="curl -i -X PUT -H 'Fencing-Token: 5' --data v5 http://127.0.0.1:$port/objects/b/report.txt     # replica 1: 201
curl -i -X PUT -H 'Fencing-Token: 4' --data v4 http://127.0.0.1:$second/objects/b/report.txt   # replica 2: 409, the fence is shared
curl http://127.0.0.1:$second/objects/b/report.txt                                            # v5
# replica 2: http://127.0.0.1:$second (log $data/proxy-2.log); etcd: $ETCD_ENDPOINTS" ;;
  s3)
    store=$(stockade_free_port)
    step "starting s3proxy on 127.0.0.1:$store (a first run resolves it with Maven: a minute or two; log"\
         "$data/s3proxy.out)"
    S3PROXY_PORT=$store scripts/s3proxy.sh "$data/s3proxy" > "$data/s3proxy.out" 2>&1 &
    pids+=($!)
    await_line "$data/s3proxy.out" "stockade: s3proxy on " "$!" 3000
    stockade_wait_port "$store" "$!" "$data/s3proxy.out"
    export S3_ENDPOINT="http://127.0.0.1:$store"
    config=policies/examples/s3.yaml
    # the example's client key; curl 7.x signs no payload hash of its own, so the request names it unsigned
    sign="--aws-sigv4 aws:amz:us-east-1:s3 --user app:app-secret-change-me -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD'"
    session="curl -i -X PUT $sign -H 'Fencing-Token: 7' --data v7 http://127.0.0.1:$port/reports/2026/report.csv   # 200
curl -i -X PUT $sign -H 'Fencing-Token: 6' --data v6 http://127.0.0.1:$port/reports/2026/report.csv   # 412 stale
curl $sign http://127.0.0.1:$port/reports/2026/report.csv                                         # v7
# s3proxy: $S3_ENDPOINT (keys minioadmin/minioadmin, log $data/s3proxy/s3proxy.log); the AWS CLI: docs/s3.md" ;;
  sql)
    command -v psql >/dev/null || { echo "example: psql not found (apt-get install -y postgresql-client)" >&2; exit 1; }
    export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
    export STOCKADE_SQL_DATABASE=${STOCKADE_SQL_DATABASE:-stockade_sql_example}
    sqlport=${STOCKADE_SQL_PORT:-$(stockade_free_port)}
    export STOCKADE_SQL_PORT=$sqlport
    db=$STOCKADE_SQL_DATABASE app=stockade_example_app
    PGOPTIONS='-c client_min_messages=warning' psql -q -X -v ON_ERROR_STOP=1 -d postgres >&2 <<SQL
DROP DATABASE IF EXISTS "$db" WITH (FORCE);
CREATE DATABASE "$db";
DO \$\$ BEGIN CREATE ROLE $app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$;
SQL
    psql -q -X -v ON_ERROR_STOP=1 -v app_role=$app -d "$db" -f policies/examples/sql.sql >&2
    openssl rand -hex 32 > "$data/sql.key" 2>/dev/null \
      || python3 -c 'import secrets; print(secrets.token_hex(32))' > "$data/sql.key"
    config=policies/examples/sql.yaml
    bin/stockade sql install --config "$config" --user "$PGUSER" >&2
    conn="host=127.0.0.1 port=$sqlport dbname=$db user=$app"
    session="psql \"$conn options='-c stockade.fencing_token=7'\" -c \"UPDATE jobs SET state = 'done by 7' WHERE id = 1\"   # UPDATE 1
psql \"$conn options='-c stockade.fencing_token=6'\" -c \"UPDATE jobs SET state = 'done by 6' WHERE id = 1\"   # ERROR:  stockade: stale fencing token 6
psql \"$conn\" -tA -c \"SELECT state FROM jobs WHERE id = 1\"   # done by 7
# SQL listener: postgresql://127.0.0.1:$sqlport (database $db on $PGHOST:$PGPORT; what is fenced: docs/sql.md)" ;;
esac

step "starting the proxy on 127.0.0.1:$port with $config (log $data/proxy.log)"
bin/stockade --config "$config" > "$data/proxy.log" 2>&1 &
pids+=($!)
await_line "$data/proxy.log" "Stockade listening" "$!"
echo "proxy: http://127.0.0.1:$port"
echo "policy: $config; data: $data (emptied at start: every run begins clean); logs: $data/proxy.log"
echo "try:"
echo "$session"
echo "(Ctrl-C stops the proxy and what this script started)"
wait "${pids[@]}"

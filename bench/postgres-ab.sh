#!/usr/bin/env bash
# Before/after for the postgres backend, in one run: two proxies from two builds (JAR and BASELINE_JAR) on the same
# policy, each on its own database of the same tables, running  PUT /accounts/acc<id>/balance  (Fencing-Token 7,
# fence: table) as one UPDATE fenced in its transaction; wrk (bench/pg-put.lua) alternates between them REPEATS
# times. With PGBOUNCER=1 a third target: JAR's proxy through Debian's PgBouncer in transaction pooling (pool of POOL
# server connections).
# Needs PostgreSQL at 127.0.0.1:5432 (trust auth).
#
#   BASELINE_JAR=/elsewhere/proxy/target/stockade-proxy.jar bench/postgres-ab.sh   # DURATION=5s REPEATS=4 WRITERS=8
#   PGBOUNCER=1 BASELINE_JAR=... bench/postgres-ab.sh
#   AFTER_BACKEND="one-statement: true" BASELINE_JAR=... bench/postgres-ab.sh   # a backend key for JAR's proxy only
#   AFTER_DATASOURCE="statements: named" BEFORE_DATASOURCE="statements: unnamed" BASELINE_JAR=$JAR ...
#                                                   # datasource keys for each proxy (the same jar: one setting A/B)
# pg_us/req: the CPU of every PostgreSQL process (the proxy's connections) a request, beside the proxy's own.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk

DURATION=${DURATION:-5s}
REPEATS=${REPEATS:-4}
WRITERS=${WRITERS:-8}
ROWS=${ROWS:-64}
POOL=${POOL:-8}
export ROWS
command -v wrk >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q wrk >/dev/null; }
jar=${JAR:-proxy/target/stockade-proxy.jar}
baseline=${BASELINE_JAR:?BASELINE_JAR names the proxy jar of the build to compare with}
[ -f "$jar" ] || mvn -B -q -DskipTests package -pl policies,proxy -am

# Each build's proxy writes its own database, alike: a build applies its own fence functions (stockade-fences.sql)
# at start, and two builds on one database would run whichever started last.
db=stockade_bench
for d in $db ${db}_before; do
  psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$d'" | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $d"
  psql -h 127.0.0.1 -U postgres -d $d -q <<SQL
DROP TABLE IF EXISTS accounts;
DROP TABLE IF EXISTS stockade_fences;
CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts SELECT 'acc' || i, 0 FROM generate_series(0, $ROWS - 1) i;
SQL
done

stockade_bench_workdir stockade-pgab
printf '%s\n' 'handlers=java.util.logging.ConsoleHandler' '.level=WARNING' 'stockade.decision.level=OFF' \
  > "$work/logging.properties"

targets=(after before)
declare -A port pid
if [ -n "${PGBOUNCER:-}" ]; then
  [ -x /usr/sbin/pgbouncer ] || { apt-get update -q >/dev/null && apt-get install -y -q pgbouncer >/dev/null; }
  bport=$(stockade_free_port)
  cat > "$work/pgbouncer.ini" <<INI
[databases]
$db = host=127.0.0.1 port=5432 dbname=$db
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
auth_type = trust
auth_file = $work/users.txt
pool_mode = transaction
default_pool_size = $POOL
max_client_conn = 500
ignore_startup_parameters = extra_float_digits
INI
  echo '"postgres" ""' > "$work/users.txt"
  chmod 755 "$work"
  as=(); [ "$(id -u)" = 0 ] && as=(-u postgres)  # PgBouncer refuses to run as root
  /usr/sbin/pgbouncer "${as[@]}" "$work/pgbouncer.ini" > "$work/pgbouncer.log" 2>&1 & pids+=($!)
  stockade_wait_port "$bport" "$!" "$work/pgbouncer.log"
  targets+=(pgbouncer)
fi

start() { # $1 = target, $2 = jar, $3 = JDBC URL, $4 = extra backend lines (JAR's proxy: AFTER_BACKEND), $5 = datasource keys
  port[$1]=$(stockade_free_port)
  cat > "$work/$1.yaml" <<YAML
server: {host: 127.0.0.1, port: ${port[$1]}}
store: {type: memory, journal: $work/journal-$1}
policies:
  - name: balance
    match: {path: "/accounts/{id}/balance", methods: [PUT]}
    scope: accounts/{id}
    backend:
      type: postgres
      datasource: {url: "$3", user: postgres, pool-size: $POOL${5:+, $5}}
${4:+      $4}
      params:
        id: path
        balance: {from: body, type: integer}
      statements:
        PUT: UPDATE accounts SET balance = :balance WHERE id = :id
YAML
  "$JAVA_HOME/bin/java" -Xmx1g -XX:+ExitOnOutOfMemoryError -Djava.util.logging.config.file="$work/logging.properties" \
    -jar "$2" --config "$work/$1.yaml" > "$work/$1.out" 2> "$work/$1.err" & pids+=($!)
  pid[$1]=$!
  stockade_wait_port "${port[$1]}" "${pid[$1]}" "$work/$1.err"
}
start after "$jar" "jdbc:postgresql://127.0.0.1:5432/$db" "${AFTER_BACKEND:-}" "${AFTER_DATASOURCE:-}"
start before "$baseline" "jdbc:postgresql://127.0.0.1:5432/${db}_before" "" "${BEFORE_DATASOURCE:-}"
[ -n "${PGBOUNCER:-}" ] && start pgbouncer "$jar" "jdbc:postgresql://127.0.0.1:$bport/$db"

run() { # $1 = target, $2 = duration -> "rps p50_ms non2xx cpu_us pg_us"
  local before after pg_before pg_after line rps p50 non2xx requests
  before=$(stockade_cpu_ticks "${pid[$1]}")
  pg_before=$(stockade_pg_cpu_ticks)
  line=$(wrk -t2 -c"$WRITERS" -d"$2" --timeout 10s -s bench/pg-put.lua "http://127.0.0.1:${port[$1]}" 2>&1 \
    | sed -n 's/^BENCH rps=\([^ ]*\) p50_ms=\([^ ]*\) p99_ms=[^ ]* non2xx=\([^ ]*\) requests=\([^ ]*\)$/\1 \2 \3 \4/p')
  after=$(stockade_cpu_ticks "${pid[$1]}")
  pg_after=$(stockade_pg_cpu_ticks)
  read -r rps p50 non2xx requests <<< "$line"
  echo "$rps $p50 $non2xx $(stockade_us_per_request $((after - before)) "$requests")" \
    "$(stockade_us_per_request $((pg_after - pg_before)) "$requests")"
}

echo "warming up ..." >&2
for t in "${targets[@]}"; do run "$t" "${WARMUP:-10s}" >/dev/null; done
: > "$work/results"
for r in $(seq 1 "$REPEATS"); do
  for t in "${targets[@]}"; do
    echo "$t $r $(run "$t" "$DURATION")" | tee -a "$work/results" >&2
  done
done
echo
echo "postgres backend before/after, $(date -u +%Y-%m-%dT%H:%MZ), WRITERS=$WRITERS DURATION=$DURATION" \
  "REPEATS=$REPEATS POOL=$POOL, $(nproc) cores; after: $jar; before: $baseline"
printf '%-10s %10s %10s %8s %8s %12s %12s\n' target rps_median ratio p50_ms non2xx cpu_us/req pg_us/req
base=$(awk '$1 == "before" { print $3 }' "$work/results" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
for t in "${targets[@]}"; do
  awk -v t="$t" -v base="$base" '$1 == t' "$work/results" | awk -v base="$base" '
    function median(list,   a, k) { k = split(list, a, " "); asort(a); return a[int((k + 1) / 2)] }
    { t = $1; p = p " " $3; l = l " " $4; e += $5; c = c " " $6; g = g " " $7 }
    END { printf "%-10s %10.0f %10.2f %8.3f %8d %12s %12s\n", t, median(p), median(p) / base, median(l), e, median(c),
      median(g) }'
done

#!/usr/bin/env bash
# The postgres backend against the bare write, C clients on both sides, in one run:
#   pgbench -M prepared running  UPDATE accounts SET balance = :n WHERE id = :id  directly, and
#   wrk sending  PUT /accounts/acc<id>/balance {"balance": n}  (Fencing-Token 7) through Stockade, which runs the
#   same UPDATE fenced (fence: table): an explicit transaction by default, one statement carrying the fence with
#   ONE_STATEMENT=true.
# ROWS accounts (64), WRITERS (8 32) concurrent clients, DURATION per run, REPEATS alternating runs; then one
# writer, to compare median latencies (what the proxy adds). Needs PostgreSQL at 127.0.0.1:5432 (trust auth).
#
#   bench/postgres-wrk.sh                         # DURATION=10s REPEATS=3 WRITERS="8 32"
#   JAR=other/stockade-proxy.jar bench/postgres-wrk.sh
#   WARMUP=60s bench/postgres-wrk.sh               # the warm-up through the proxy before the first run (40s)
#   PROXY_JAVA_OPTS="-XX:StartFlightRecording=..." bench/postgres-wrk.sh
#   COMMIT=pipelined bench/postgres-wrk.sh          # the backend's commit: key (unset: the default, separate)
#   ONE_STATEMENT=true bench/postgres-wrk.sh        # the backend's one-statement: key (unset: the default, false)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk

DURATION=${DURATION:-10s}
REPEATS=${REPEATS:-3}
WRITERS=${WRITERS:-"8 32"}
ROWS=${ROWS:-64}
POOL=${POOL:-32}
export ROWS
for tool in wrk pgbench; do
  command -v "$tool" >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q wrk postgresql-client >/dev/null; }
done
jar=${JAR:-proxy/target/stockade-proxy.jar}
[ -f "$jar" ] || mvn -B -q -DskipTests package -pl policies,proxy -am

db=stockade_bench
psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $db"
psql -h 127.0.0.1 -U postgres -d $db -q <<SQL
DROP TABLE IF EXISTS accounts;
DROP TABLE IF EXISTS stockade_fences;
CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts SELECT 'acc' || i, 0 FROM generate_series(0, $ROWS - 1) i;
SQL

stockade_bench_workdir stockade-pgbench

port=$(stockade_free_port)
cat > "$work/proxy.yaml" <<YAML
server: {host: 127.0.0.1, port: $port}
store: {type: memory, journal: $work/journal}
policies:
  - name: balance
    match: {path: "/accounts/{id}/balance", methods: [PUT]}
    scope: accounts/{id}
    backend:
      type: postgres
      datasource: {url: "jdbc:postgresql://127.0.0.1:5432/$db", user: postgres, pool-size: $POOL}
${COMMIT:+      commit: $COMMIT}
${ONE_STATEMENT:+      one-statement: $ONE_STATEMENT}
      params:
        id: path
        balance: {from: body, type: integer}
      statements:
        PUT: UPDATE accounts SET balance = :balance WHERE id = :id
YAML
printf '%s\n' 'handlers=java.util.logging.ConsoleHandler' '.level=WARNING' 'stockade.decision.level=OFF' > "$work/logging.properties"
# shellcheck disable=SC2086 # PROXY_JAVA_OPTS is a list of options
"$JAVA_HOME/bin/java" -Xmx1g -XX:+ExitOnOutOfMemoryError ${PROXY_JAVA_OPTS:-} -Djava.util.logging.config.file="$work/logging.properties" \
  -jar "$jar" --config "$work/proxy.yaml" > "$work/proxy.out" 2> "$work/proxy.err" & pids+=($!)
proxy_pid=$!
stockade_wait_port "$port" "$proxy_pid" "$work/proxy.err"

cat > "$work/update.sql" <<SQL
\set id random(0, $ROWS - 1)
\set n random(1, 1000000000)
UPDATE accounts SET balance = :n WHERE id = 'acc' || :id;
SQL
secs=${DURATION%s}

bare() { # $1 = writers -> "tps p50_ms"
  rm -f "$work"/pgbench_log.*
  (cd "$work" && pgbench -h 127.0.0.1 -U postgres -n -M prepared -c "$1" -j "$(( $1 < 2 ? 1 : 2 ))" -T "$secs" \
    -f update.sql -l --log-prefix=pgbench_log $db 2>&1) | awk '/^tps/ { tps = $3 } END { print tps }' > "$work/tps"
  # per-transaction log: the third field is the latency in microseconds
  p50=$(cat "$work"/pgbench_log.* | awk '{ print $3 }' | sort -n | awk '{ a[NR] = $1 } END { printf "%.3f", a[int((NR + 1) / 2)] / 1000 }')
  echo "$(cat "$work/tps") $p50"
}
proxied() { # $1 = writers -> "rps p50_ms non2xx cpu_us"
  local before after line
  before=$(stockade_cpu_ticks "$proxy_pid")
  line=$(wrk -t"$(( $1 < 2 ? 1 : 2 ))" -c"$1" -d"$DURATION" --timeout 10s -s bench/pg-put.lua "http://127.0.0.1:$port" 2>&1 \
    | sed -n 's/^BENCH rps=\([^ ]*\) p50_ms=\([^ ]*\) p99_ms=[^ ]* non2xx=\([^ ]*\) requests=\([^ ]*\)$/\1 \2 \3 \4/p')
  after=$(stockade_cpu_ticks "$proxy_pid")
  read -r rps p50 non2xx requests <<< "$line"
  echo "$rps $p50 $non2xx $(stockade_us_per_request $((after - before)) "$requests")"
}

echo "warming up ..." >&2
DURATION=${WARMUP:-40s} proxied 8 >/dev/null # the JIT: at ~2 000 writes/s, C2 is still compiling the path after 10 s
results="$work/results"
: > "$results"
for w in $WRITERS 1; do
  for r in $(seq 1 "$REPEATS"); do
    read -r tps bp50 < <(bare "$w")
    read -r rps pp50 non2xx cpu < <(proxied "$w")
    echo "$w $r $tps $bp50 $rps $pp50 $non2xx $cpu" | tee -a "$results" >&2
  done
done

echo
echo "Stockade postgres backend vs pgbench, $(date -u +%Y-%m-%dT%H:%MZ), DURATION=$DURATION REPEATS=$REPEATS ROWS=$ROWS, $(nproc) cores"
printf '%-8s %12s %12s %8s %10s %10s %10s %8s %12s\n' writers bare_tps proxy_rps ratio bare_p50 proxy_p50 added_ms non2xx cpu_us/req
for w in $WRITERS 1; do
  awk -v w="$w" '$1 == w' "$results" | awk '
    function median(list,   a, k) { k = split(list, a, " "); asort(a); return a[int((k + 1) / 2)] }
    { w = $1; t = t " " $3; bp = bp " " $4; p = p " " $5; pp = pp " " $6; e += $7; c = c " " $8 }
    END { printf "%-8s %12.0f %12.0f %8.2f %10.3f %10.3f %10.3f %8d %12s\n", w, median(t), median(p),
      median(p) / median(t), median(bp), median(pp), median(pp) - median(bp), e, median(c) }'
done
echo "(targets: proxy/bare >= 0.70 at 8 and 32 writers; added median latency <= 0.2 ms with one writer)"

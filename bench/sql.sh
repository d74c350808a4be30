#!/usr/bin/env bash
# The PostgreSQL listener against the bare write, in one run: the same  UPDATE accounts SET balance = :n WHERE id = :id
# by  pgbench -M prepared  (the same script file byte for byte) three ways, alternating:
#   straight   straight to PostgreSQL, on a database without the fence (the baseline every ratio is against);
#   trigger    straight to PostgreSQL, on a database with the fence installed ('stockade sql install'): the trigger
#              checks every row, and the token carries a proof the script makes itself with the listener's key
#              (a transaction proof, 't:<expiry>': the check a listener's token gets, without the listener);
#   listener   through Stockade's PostgreSQL listener to that database, the token in the startup options
#              (PGOPTIONS='-c stockade.fencing_token=7'): the listener verifies it and proves it for the session.
# One token (7) for every write: a steady holder, equal tokens accepted. ROWS accounts (64), WRITERS (8 32)
# concurrent clients, DURATION per run, REPEATS alternating rounds; medians. Needs PostgreSQL at 127.0.0.1:5432
# (trust auth for postgres) and pgbench (Debian postgresql-contrib or the server package).
#
#   bench/sql.sh                                    # DURATION=10s REPEATS=3 WRITERS="8 32" WARMUP=20s
#   JAR=other/stockade-proxy.jar bench/sql.sh       # another build of the proxy
#   PROXY_JAVA_OPTS="-XX:StartFlightRecording=..." bench/sql.sh
#   DURATION=1s REPEATS=1 WARMUP=1s bench/sql.sh   # a smoke run: that the script works, no figures
#   DEBUG=1 bench/sql.sh                            # also every pgbench's own output, on standard error
#   PROFILE_SQL=1 bench/sql.sh                      # also where the fenced database spends it: the time of each
#                                                   # fence function a call (track_functions) and the MultiXact
#                                                   # SLRU's traffic (share locks of concurrent writers), at the end
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk

DURATION=${DURATION:-10s}
REPEATS=${REPEATS:-3}
WRITERS=${WRITERS:-"8 32"}
ROWS=${ROWS:-64}
WARMUP=${WARMUP:-20s}
command -v pgbench >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q postgresql-contrib >/dev/null; }
command -v psql >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q postgresql-client >/dev/null; }
jar=${JAR:-proxy/target/stockade-proxy.jar}
[ -f "$jar" ] || bin/stockade build proxy

bare_db=stockade_bench_sql_bare
fenced_db=stockade_bench_sql
app=stockade_bench_sql_app
fence_role=stockade_bench_sql_fence
stockade_bench_workdir stockade-sql-bench

# two databases with the same table and rows: one stays bare, the other gets the fence
psql -h 127.0.0.1 -U postgres -d postgres -qX -v ON_ERROR_STOP=1 >/dev/null <<SQL
SET client_min_messages = warning;
DROP DATABASE IF EXISTS $bare_db WITH (FORCE);
DROP DATABASE IF EXISTS $fenced_db WITH (FORCE);
CREATE DATABASE $bare_db;
CREATE DATABASE $fenced_db;
DO \$\$ BEGIN CREATE ROLE $app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$;
SQL
for db in $bare_db $fenced_db; do
  psql -h 127.0.0.1 -U postgres -d $db -qX -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts SELECT i, 0 FROM generate_series(0, $ROWS - 1) i;
GRANT SELECT, UPDATE ON accounts TO $app;
SQL
done

port=$(stockade_free_port)
sql_port=$(stockade_free_port)
secret=$(openssl rand -hex 32 2>/dev/null || python3 -c 'import secrets; print(secrets.token_hex(32))')
echo "$secret" > "$work/sql.key"
cat > "$work/proxy.yaml" <<YAML
server: {host: 127.0.0.1, port: $port}
store: {type: memory, journal: $work/journal}
sql:
  listen: {host: 127.0.0.1, port: $sql_port}
  database: {host: 127.0.0.1, port: 5432, name: $fenced_db}
  fence-role: $fence_role
  secret-file: $work/sql.key
  policies:
    - name: accounts
      tables:
        - {table: accounts, scope: "accounts/{id}"}
YAML
"$JAVA_HOME/bin/java" -jar "$jar" sql install --config "$work/proxy.yaml" >&2
printf '%s\n' 'handlers=java.util.logging.ConsoleHandler' '.level=WARNING' 'stockade.decision.level=OFF' \
  > "$work/logging.properties"
# shellcheck disable=SC2086 # PROXY_JAVA_OPTS is a list of options
"$JAVA_HOME/bin/java" -Xmx1g -XX:+ExitOnOutOfMemoryError ${PROXY_JAVA_OPTS:-} \
  -Djava.util.logging.config.file="$work/logging.properties" \
  -jar "$jar" --config "$work/proxy.yaml" > "$work/proxy.out" 2> "$work/proxy.err" & pids+=($!)
proxy_pid=$!
stockade_wait_port "$sql_port" "$proxy_pid" "$work/proxy.err"

# the trigger run's token: 7 with a transaction proof valid for a day, HMAC-SHA256 with the listener's key
# (SHA-256 of the secret file's first line), as docs/sql.md describes it
proof=$(python3 - "$secret" <<'PY'
import hashlib, hmac, sys, time
signed = "7;t:%d" % (int(time.time() * 1000) + 86400000)
key = hashlib.sha256(sys.argv[1].encode()).digest()
print(signed + ":" + hmac.new(key, signed.encode(), hashlib.sha256).hexdigest())
PY
)

cat > "$work/update.sql" <<SQL
\set id random(0, $ROWS - 1)
\set n random(1, 1000000000)
UPDATE accounts SET balance = :n WHERE id = :id;
SQL
secs=${DURATION%s}

run() { # $1 = straight|trigger|listener, $2 = writers, $3 = seconds -> "tps p50_ms failed"
  local host_port=5432 db=$fenced_db options before after out
  case "$1" in
    straight) db=$bare_db; options="" ;;
    trigger) options="-c stockade.fencing_token=$proof" ;;
    listener) host_port=$sql_port; options="-c stockade.fencing_token=7" ;;
  esac
  rm -f "$work"/pgbench_log.*
  before=$(stockade_cpu_ticks "$proxy_pid")
  out=$(cd "$work" && PGOPTIONS="$options" pgbench -h 127.0.0.1 -p "$host_port" -U "$app" -n -M prepared -c "$2" \
    -j "$(( $2 < 2 ? 1 : 2 ))" -T "$3" -f update.sql -l --log-prefix=pgbench_log "$db" 2>&1) \
    || { echo "bench: pgbench ($1) failed:" >&2; echo "$out" | tail -5 >&2; exit 1; }
  after=$(stockade_cpu_ticks "$proxy_pid")
  local tps failed p50 count
  tps=$(echo "$out" | awk '/^tps/ { print $3; exit }')
  failed=$(echo "$out" | awk '/number of failed transactions/ { print $5; exit }')
  [ -n "$tps" ] || { echo "bench: pgbench ($1, $2 writers) printed no tps:" >&2; echo "$out" | tail -5 >&2; exit 1; }
  # per-transaction log: the third field is the latency in microseconds
  count=$(cat "$work"/pgbench_log.* | wc -l)
  p50=$(cat "$work"/pgbench_log.* | awk '{ print $3 }' | sort -n \
    | awk '{ a[NR] = $1 } END { printf "%.3f", a[int((NR + 1) / 2)] / 1000 }')
  [ -n "${DEBUG:-}" ] && echo "$out" >&2
  echo "$tps $p50 ${failed:-0} $(stockade_us_per_request $((after - before)) "$count")"
}

if [ -n "${PROFILE_SQL:-}" ]; then
  psql -h 127.0.0.1 -U postgres -d postgres -qX -v ON_ERROR_STOP=1 >/dev/null \
    -c "ALTER DATABASE $fenced_db SET track_functions = 'all'" -c "SELECT pg_stat_reset_slru(NULL)"
fi
echo "warming up ($WARMUP through the listener) ..." >&2
run listener 8 "${WARMUP%s}" > /dev/null
results="$work/results"
: > "$results"
for w in $WRITERS; do
  for r in $(seq 1 "$REPEATS"); do
    run straight "$w" "$secs" > "$work/run"; read -r st sp sf _ < "$work/run"
    run trigger "$w" "$secs" > "$work/run"; read -r tt tp tf _ < "$work/run"
    run listener "$w" "$secs" > "$work/run"; read -r lt lp lf lc < "$work/run"
    [ -n "${DEBUG:-}" ] && cat "$work/run" >&2
    echo "$w $r $st $sp $tt $tp $lt $lp $((sf + tf + lf)) $lc" | tee -a "$results" >&2
  done
done
# every write was checked: the fence row of a scope the runs wrote holds token 7
fenced=$(psql -h 127.0.0.1 -U postgres -d $fenced_db -tAX -c \
  "SELECT count(*) FROM stockade.stockade_fences WHERE token = 7")

echo
echo "Stockade PostgreSQL listener vs straight PostgreSQL (pgbench -M prepared, the same UPDATE)," \
  "$(date -u +%Y-%m-%dT%H:%MZ), DURATION=$DURATION REPEATS=$REPEATS ROWS=$ROWS, $(nproc) cores"
printf '%-8s %12s %12s %12s %9s %9s %10s %10s %10s %7s %12s\n' writers straight_tps trigger_tps listener_tps \
  trig/str list/str straight_p50 trigger_p50 listen_p50 failed proxy_us/tx
for w in $WRITERS; do
  awk -v w="$w" '$1 == w' "$results" | awk '
    function median(list,   a, k) { k = split(list, a, " "); asort(a); return a[int((k + 1) / 2)] }
    { w = $1; s = s " " $3; sp = sp " " $4; t = t " " $5; tp = tp " " $6; l = l " " $7; lp = lp " " $8
      f += $9; c = c " " $10 }
    END { printf "%-8s %12.0f %12.0f %12.0f %9.2f %9.2f %10.3f %10.3f %10.3f %7d %12s\n", w, median(s),
      median(t), median(l), median(t) / median(s), median(l) / median(s), median(sp), median(tp), median(lp), f,
      median(c) }'
done
echo "(aim: listener/straight >= 0.80 at 8 and 32 writers; $fenced of $ROWS scopes hold token 7 in the fence table)"
if [ -n "${PROFILE_SQL:-}" ]; then
  echo
  echo "Where the fenced database spent it (every trigger and listener run, warm-up included):"
  psql -h 127.0.0.1 -U postgres -d $fenced_db -qX -P pager=off -c "SELECT schemaname || '.' || funcname AS function,
      calls, round((self_time / nullif(calls, 0) * 1000)::numeric, 1) AS self_us_a_call,
      round((total_time / nullif(calls, 0) * 1000)::numeric, 1) AS total_us_a_call
    FROM pg_stat_user_functions ORDER BY total_time DESC" \
    -c "SELECT name, blks_zeroed, blks_hit, blks_read, blks_written FROM pg_stat_slru WHERE name LIKE 'Multi%'"
fi

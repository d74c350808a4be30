#!/usr/bin/env bash
# The conformance suite's racing + fault scenarios for a long run: at least --ops operations (writes issued through
# the proxy, summed over the scenarios) per backend, each backend in turn. Figures of a run: docs/conformance-runs.md.
#
#   scripts/conformance-long.sh [--backend all|file|http|http-if-match|postgres|s3[,...]] [--ops 10000]
#                               [--duration 8m] [--writers 4] [--scenario pause,delay,...] [--max-rounds 3]
#                               [--out DIR] [--no-build]
#
# Defaults: every backend, 10000 operations each, 8 minutes per scenario run, 4 writers, the five scenarios below,
# reports under target/conformance-long/<date-time>.
#
# For each backend it builds what CI's ConformanceBackendsIT builds (the same policies and target files), with the proxy
# launched by the suite itself from the target's proxy.launch (so proxy-restart can kill -9 it):
#   file           the file backend over DIR/files, memory fence store (journal in DIR)
#   http           the HTTP backend (conditional: none, serialized) in front of PlainHttpStore over DIR/upstream
#   http-if-match  the HTTP backend with conditional: if-match (atomic) in front of the proxy tests' TestUpstream,
#                  which honours If-Match/If-None-Match atomically
#   postgres       the postgres backend (fence: table) upserting into docs in a fresh schema of database test on
#                  127.0.0.1:5432 (user postgres, trust; STOCKADE_PG_URL / STOCKADE_PG_USER override); the schema is
#                  dropped at the end
#   s3             the S3 backend (atomic, auth: sigv4) in front of s3proxy 3.0.0 over a transient blob store
# The upstreams run as processes of their own (scripts/conformance-upstream.java on the conformance module's test
# class path). No fence store is launched: every backend runs the scenarios that need none (pause, delay, timeout,
# lost-response, proxy-restart), as in CI.
#
# --duration is each scenario run's fault-injection time (the suite's --duration; the control runs as long again).
# When a backend's first round stays below --ops, another round runs, with a duration estimated from the rate seen,
# at most --max-rounds in all. Each round's reports (conformance-report.json, TEST-conformance.xml, the suite's
# output suite.log, the proxy's log work/proxy.log) are in OUT/BACKEND/round-N; OUT/BACKEND/summary.{txt,md,json}
# and OUT/summary.md sum them up
# (scripts/conformance-summary.py, from the JSON reports). Loopback only. Every process the script starts (the
# upstreams, the suite and the suite's children: proxy, writers) is killed by PID when it ends, whatever the
# reason; each suite run is bounded in time (2 x scenarios x (duration + 3 min) + 5 min).
#
# Exit code: 0 when every backend reached --ops and every scenario passed; 1 when one was short of --ops or a
# verdict was not PASS (INCONCLUSIVE: read the reasons); 3 as soon as a run shows a violation through the proxy
# (a stale write accepted, an acknowledged write lost): the script stops there; 2 on bad arguments or a broken run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven
JAVA="$JAVA_HOME/bin/java"

ALL_BACKENDS=(file http http-if-match postgres s3)
backends=all
ops_target=10000
duration=8m
writers=4
scenarios=pause,delay,timeout,lost-response,proxy-restart
max_rounds=3
out="$ROOT/target/conformance-long/$(date +%Y%m%d-%H%M%S)"
build=1
PG_URL=${STOCKADE_PG_URL:-jdbc:postgresql://127.0.0.1:5432/test}
PG_USER=${STOCKADE_PG_USER:-postgres}

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backends=$2; shift 2 ;;
    --ops) ops_target=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --writers) writers=$2; shift 2 ;;
    --scenario) scenarios=$2; shift 2 ;;
    --max-rounds) max_rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "conformance-long: unknown argument $1" >&2; usage; exit 2 ;;
  esac
done
[ "$backends" = all ] && backends=$(IFS=,; echo "${ALL_BACKENDS[*]}")
IFS=, read -r -a selected <<<"$backends"
for b in "${selected[@]}"; do
  case " ${ALL_BACKENDS[*]} " in *" $b "*) ;; *) echo "conformance-long: unknown backend $b" >&2; exit 2 ;; esac
done
# --duration as whole seconds (the suite takes 250ms, 30s, 2m, 1h; whole seconds and minutes here)
seconds_of() {
  case "$1" in
    *m) echo $(( ${1%m} * 60 )) ;; *s) echo "${1%s}" ;; *h) echo $(( ${1%h} * 3600 )) ;;
    *) echo "conformance-long: --duration is 90s, 6m or 1h" >&2; exit 2 ;;
  esac
}
duration_s=$(seconds_of "$duration")
[[ "$ops_target" =~ ^[0-9]+$ && "$writers" =~ ^[0-9]+$ && "$max_rounds" =~ ^[0-9]+$ && "$duration_s" -gt 0 ]] \
  || { echo "conformance-long: --ops, --writers, --max-rounds are whole numbers, --duration > 0" >&2; exit 2; }
IFS=, read -r -a scenario_list <<<"$scenarios"
n_scenarios=${#scenario_list[@]}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# ------------------------------------------------------------------ processes we started, killed by PID at the end

STARTED=()          # PIDs of the processes this script started (their descendants are found when they are killed)
SCHEMAS=()          # PostgreSQL schemas to drop
descendants() {     # prints every descendant of $1, deepest last
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$c"
    descendants "$c"
  done
}
kill_tree() {       # the process $1 and every descendant (a stopped writer is woken so it can die)
  local root=$1 tree
  kill -0 "$root" 2>/dev/null || return 0
  tree="$root $(descendants "$root" | tr '\n' ' ')"
  # shellcheck disable=SC2086
  kill -CONT $tree 2>/dev/null || true
  kill -TERM "$root" 2>/dev/null || true
  for _ in $(seq 30); do kill -0 "$root" 2>/dev/null || break; sleep 0.1; done
  # shellcheck disable=SC2086
  kill -KILL $tree 2>/dev/null || true
}
cleanup() {
  local pid s
  for pid in "${STARTED[@]}"; do kill_tree "$pid"; done
  for s in "${SCHEMAS[@]}"; do psql_test -c "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
trap 'echo "conformance-long: interrupted" >&2; exit 130' INT TERM
forget() {          # $1 ended: no longer ours to kill
  local keep=() p
  for p in "${STARTED[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  STARTED=("${keep[@]}")
}
psql_test() {       # psql on the database of PG_URL (host, port and name taken from it)
  local hostport=${PG_URL#jdbc:postgresql://}; hostport=${hostport%%/*}
  local db=${PG_URL#jdbc:postgresql://*/}; db=${db%%\?*}
  psql -q -v ON_ERROR_STOP=1 -h "${hostport%%:*}" -p "${hostport##*:}" -U "$PG_USER" -d "$db" "$@"
}

# ------------------------------------------------------------------ build

if [ "$build" = 1 ]; then
  echo "conformance-long: building (proxy, conformance and the test class path)" >&2
  # -am: the reactor's own modules, never stockade artifacts from ~/.m2
  mvn -B -ntp -q -DskipTests package dependency:build-classpath -Dmdep.includeScope=test \
      -Dmdep.outputFile=target/test-classpath.txt -pl conformance -am >&2
fi
for f in proxy/target/stockade-proxy.jar conformance/target/stockade-conformance.jar \
         conformance/target/test-classpath.txt proxy/target/test-classes; do
  [ -e "$f" ] || { echo "conformance-long: $f is missing (run without --no-build)" >&2; exit 2; }
done
# The upstream launcher's class path: the suite, the proxy's test classes (TestUpstream), s3proxy & co.
UPSTREAM_CP="$ROOT/conformance/target/classes:$ROOT/proxy/target/test-classes:$(cat conformance/target/test-classpath.txt)"

# ------------------------------------------------------------------ one backend's files and upstream

UPSTREAM_URL=
start_upstream() {  # $1 log file, then the launcher's arguments; sets UPSTREAM_URL
  local log=$1; shift
  "$JAVA" -Xmx2g -cp "$UPSTREAM_CP" scripts/conformance-upstream.java "$@" >"$log" 2>&1 </dev/null &
  local pid=$!
  STARTED+=("$pid")
  for _ in $(seq 1200); do
    UPSTREAM_URL=$(sed -n 's/^upstream listening on \(http:[^ ]*\).*/\1/p' "$log" | head -1)
    [ -n "$UPSTREAM_URL" ] && { echo "conformance-long: upstream $1 on $UPSTREAM_URL, pid $pid" >&2; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "conformance-long: the upstream ($*) did not start; its log, $log:" >&2
  tail -20 "$log" >&2
  exit 2
}

memory_store() { printf 'store:\n  type: memory\n  journal: %s\n' "$1/journal"; }

http_policy() {     # $1 upstream URL, $2 conditional
  cat <<EOF
  - name: docs
    match:
      path: /docs/{path...}
      methods: [GET, HEAD, PUT, DELETE]
    scope: docs/{path}
    fence:
      methods: [PUT, DELETE]
    backend:
      type: http
      url: $1
      conditional: $2
      timeout: 10s
      settle: 1s
EOF
}

# Writes DIR/stockade.yaml and DIR/target.yaml for backend $1 (starting its upstream first).
prepare() {
  local b=$1 dir=$2 store policies proxy_path target_rest
  store=$(memory_store "$dir")
  case "$b" in
    file)
      policies=$(cat <<EOF
  - name: files
    match:
      path: /files/{path...}
      methods: [GET, HEAD, PUT, DELETE]
    scope: files/{path}
    fence:
      methods: [PUT, DELETE]
    backend:
      type: file
      root: $dir/files
EOF
)
      proxy_path=/files/{key}
      target_rest=$(printf 'read:\n  directory: %s\n  file: files/{key}\ncontrol:\n  directory: %s\n  file: files/{key}\n' \
        "$dir/files" "$dir/files") ;;
    http|http-if-match)
      if [ "$b" = http ]; then
        start_upstream "$dir/upstream.log" http "$dir/upstream"
        policies=$(http_policy "$UPSTREAM_URL" none)
      else
        start_upstream "$dir/upstream.log" http-if-match
        policies=$(http_policy "$UPSTREAM_URL" if-match)
      fi
      proxy_path=/docs/{key}
      target_rest=$(printf 'read:\n  url: %s\n  path: /docs/{key}\ncontrol:\n  url: %s\n  path: /docs/{key}\n' \
        "$UPSTREAM_URL" "$UPSTREAM_URL") ;;
    postgres)
      local schema url
      schema="conflong_$(date +%s)_$$"
      psql_test -c "CREATE SCHEMA $schema" -c "CREATE TABLE $schema.docs (id text PRIMARY KEY, body text NOT NULL)"
      SCHEMAS+=("$schema")
      url="$PG_URL?currentSchema=$schema"
      policies=$(cat <<EOF
  - name: docs
    match:
      path: /docs/{id...}
      methods: [PUT]
    scope: docs/{id}
    backend:
      type: postgres
      datasource:
        url: "$url"
        user: $PG_USER
        statement-timeout: 5s
      params:
        id: path
        body: {from: body-text}
      statements:
        PUT: "INSERT INTO docs (id, body) VALUES (:id, :body) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body"
EOF
)
      proxy_path=/docs/{key}
      target_rest=$(cat <<EOF
read:
  jdbc: "$url"
  user: $PG_USER
  sql: select body from docs where id = ?
control:
  jdbc: "$url"
  user: $PG_USER
  sql: "INSERT INTO docs (id, body) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body"
EOF
) ;;
    s3)
      start_upstream "$dir/upstream.log" s3 conformance upstream-key upstream-secret
      policies=$(cat <<EOF
  - name: s3
    match: {path: "/{path...}"}
    scope: s3
    backend:
      type: s3
      endpoint: $UPSTREAM_URL
      access-key: upstream-key
      secret-key: upstream-secret
      auth: sigv4
      clients:
        - {access-key: app-key, secret-key: app-secret}
      timeout: 10s
EOF
)
      proxy_path=/conformance/{key}
      target_rest=$(cat <<EOF
  access-key: app-key
  secret-key: app-secret
read:
  s3: $UPSTREAM_URL
  bucket: conformance
  access-key: upstream-key
  secret-key: upstream-secret
control:
  s3: $UPSTREAM_URL
  bucket: conformance
  access-key: upstream-key
  secret-key: upstream-secret
EOF
) ;;
  esac
  printf 'server:\n  port: 0\n%s\npolicies:\n%s\n' "$store" "$policies" >"$dir/stockade.yaml"
  # target_rest may start with lines indented under proxy: (the S3 writers' keys)
  cat >"$dir/target.yaml" <<EOF
name: $b
proxy:
  path: $proxy_path
  launch: ["$JAVA", "-XX:+ExitOnOutOfMemoryError", "-jar", "$ROOT/proxy/target/stockade-proxy.jar", "--config", "$dir/stockade.yaml"]
$target_rest
lease:
  ttl: 1s
writers: $writers
EOF
}

# ------------------------------------------------------------------ runs

# Runs the suite once: $1 target dir, $2 round, $3 duration in seconds. Returns the suite's exit code.
run_suite() {
  local dir=$1 round=$2 d=$3 report="$1/round-$2" limit pid rc start
  limit=$(( 2 * n_scenarios * (d + 180) + 300 ))
  mkdir -p "$report"
  echo "conformance-long: $(basename "$dir") round $round: $scenarios, --duration ${d}s, $writers writers" \
       "(bounded at ${limit}s; progress in $report/suite.log)" >&2
  start=$(date +%s)
  "$JAVA" -jar conformance/target/stockade-conformance.jar --target "$dir/target.yaml" --scenario "$scenarios" \
      --duration "${d}s" --report "$report" >"$report/suite.log" 2>&1 </dev/null &
  pid=$!
  STARTED+=("$pid")
  while kill -0 "$pid" 2>/dev/null; do
    if [ $(( $(date +%s) - start )) -gt "$limit" ]; then
      echo "conformance-long: round $round took longer than ${limit}s: killed" >&2
      kill_tree "$pid"
      break
    fi
    sleep 5
  done
  rc=0; wait "$pid" || rc=$?
  forget "$pid"
  echo "$(( $(date +%s) - start ))" >"$report/wall-seconds"
  return "$rc"
}

overall=0
summary_md="$out/summary.md"
{
  echo "# conformance-long $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, $(uname -sr), JDK $(stockade_jdk_major "$JAVA_HOME");" \
       "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "command: scripts/conformance-long.sh --backend $backends --ops $ops_target --duration $duration" \
       "--writers $writers --scenario $scenarios --max-rounds $max_rounds"
} >"$summary_md"

for b in "${selected[@]}"; do
  dir="$out/$b"
  mkdir -p "$dir"
  b_start=$(date +%s)
  prepare "$b" "$dir"
  reports=()
  d=$duration_s
  injected=0          # seconds of fault injection so far, summed over the scenario runs through the proxy
  for round in $(seq 1 "$max_rounds"); do
    rc=0; run_suite "$dir" "$round" "$d" || rc=$?
    injected=$(( injected + n_scenarios * d ))
    if [ ! -f "$dir/round-$round/conformance-report.json" ]; then
      echo "conformance-long: $b round $round wrote no report (exit $rc); the end of its log:" >&2
      tail -30 "$dir/round-$round/suite.log" >&2
      exit 2
    fi
    reports+=("$dir/round-$round/conformance-report.json")
    src=0
    python3 scripts/conformance-summary.py --json "$dir/summary.json" "${reports[@]}" >"$dir/summary.txt" \
      2>"$dir/summary.err" || src=$?
    cat "$dir/summary.txt" "$dir/summary.err" >&2
    if [ "$src" = 3 ]; then
      echo "conformance-long: VIOLATION through the proxy on $b (round $round): stopping. Report:" \
           "$dir/round-$round/conformance-report.json" >&2
      exit 3
    fi
    [ "$src" = 0 ] || exit 2
    [ "$rc" = 0 ] || overall=1   # a verdict other than PASS
    done_ops=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"]["ops"])' "$dir/summary.json")
    [ "$done_ops" -ge "$ops_target" ] && break
    if [ "$round" -lt "$max_rounds" ]; then   # the rest, at the rate seen so far (+25 %), at least 30 s
      d=$(python3 -c 'import math,sys
ops, target, secs, n = map(float, sys.argv[1:])
rate = ops / max(1.0, secs)   # operations per second of fault injection
print(max(30, math.ceil((target - ops) / max(rate, 0.01) / n * 1.25)))' \
        "$done_ops" "$ops_target" "$injected" "$n_scenarios")
      echo "conformance-long: $b has $done_ops of $ops_target operations: another round, --duration ${d}s" >&2
    fi
  done
  # the processes of this backend (its upstream) end here; the next backend starts its own
  for pid in "${STARTED[@]}"; do kill_tree "$pid"; forget "$pid"; done
  b_wall=$(( $(date +%s) - b_start ))
  [ "$done_ops" -ge "$ops_target" ] || { overall=1; echo "conformance-long: $b stopped at $done_ops operations" \
      "(target $ops_target) after $max_rounds round(s)" >&2; }
  {
    echo
    echo "## $b ($done_ops operations, target $ops_target; wall ${b_wall}s)"
    echo
    python3 scripts/conformance-summary.py --markdown "${reports[@]}" 2>/dev/null
  } | tee "$dir/summary.md" >>"$summary_md"
done
echo "conformance-long: done; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); summary: $summary_md" >&2
echo >>"$summary_md"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$summary_md"
exit "$overall"

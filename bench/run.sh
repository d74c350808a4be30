#!/usr/bin/env bash
# What does fencing cost? One run on loopback, every figure a ratio to a baseline measured in the same run.
#
#   bench/run.sh                       # DURATION=10s REPEATS=3 CONNECTIONS="32 128"
#   DURATION=5s REPEATS=1 bench/run.sh # a quick look
#   TARGETS="direct nginx memory" BACKENDS=no bench/run.sh   # pass-through only
#   BASELINE_JAR=/elsewhere/proxy/target/stockade-proxy.jar TARGETS="direct nginx memory baseline" BACKENDS=no \
#     bench/run.sh                     # before/after: a second memory-store proxy from another build, same run
#   PROXY_JAVA_OPTS="-XX:StartFlightRecording=..." bench/run.sh   # extra JVM options for the proxies (profiling)
#   BASELINE_JAR=proxy/target/stockade-proxy.jar BASELINE_JAVA_OPTS= PROXY_JAVA_OPTS="-Dx=y" TARGETS="nginx memory \
#     baseline" bench/run.sh           # a JVM option against the same jar without it (baseline: BASELINE_JAVA_OPTS,
#                                      # default PROXY_JAVA_OPTS)
#   TARGETS="nginx vertx memory steady" BACKENDS=no bench/run.sh   # against the JVM peer alone: Vert.x's reverse
#                                      # proxy (bench/vertx-peer, built on first use), no fence, same upstream; in the
#                                      # default targets too
#   WARMUP=30s bench/run.sh            # longer JIT warm-up per proxy (default 15s)
#   SYSCALLS=1 bench/run.sh            # also count each proxy's system calls and context switches per request
#                                      # (perf stat; steadier than rps on a shared host)
#
# Starts a fast upstream (nginx answering 204), measures it directly, through nginx proxy_pass, through HAProxy
# (http mode, http-reuse always), and through Stockade (HTTP backend, fencing on) with the memory store (journal on):
# "memory" raises the fence on every request (a handoff each time), "steady" is the same proxy with a steady holder
# (one token per run, equal-token accepts); then the PostgreSQL store and the etcd store (TARGETS picks a subset).
# Servers are pinned to CPU 0 and wrk to CPU 1 (taskset), so the figures compare proxies on one core. Prints rps,
# p50, p99, the proxy's CPU time per request, and the ratios; CHART=file.svg draws them (gnuplot); stops every
# process it started. See docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven

DURATION=${DURATION:-10s}
REPEATS=${REPEATS:-3}
CONNECTIONS=${CONNECTIONS:-"32 128"}
BODY_BYTES=${BODY_BYTES:-256}
export BODY_BYTES

for tool in wrk nginx haproxy gnuplot taskset; do
  if ! command -v "$tool" >/dev/null; then
    echo "bench: installing wrk, nginx-light, haproxy and gnuplot-nox (Debian packages)" >&2
    apt-get update -q >/dev/null && apt-get install -y -q wrk nginx-light haproxy gnuplot-nox >/dev/null
    break
  fi
done

jar=${JAR:-proxy/target/stockade-proxy.jar}
if [ ! -f "$jar" ]; then
  mvn -B -q -DskipTests package -pl policies,proxy -am
fi

stockade_bench_workdir stockade-bench


nginx_conf() { # $1 = name, $2 = server block
  cat > "$work/$1.conf" <<CONF
worker_processes 1;
pid $work/$1.pid;
error_log $work/$1.error.log warn;
daemon off;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/$1-body;
  proxy_temp_path $work/$1-proxy;
  client_max_body_size 0;
  $2
}
CONF
}

upstream_port=$(stockade_free_port)
nginx_conf upstream "server { listen 127.0.0.1:$upstream_port; keepalive_requests 100000; location / { return 204; } }"
taskset -c 0 nginx -c "$work/upstream.conf" & pids+=($!)

nginx_port=$(stockade_free_port)
nginx_conf proxy "upstream up { server 127.0.0.1:$upstream_port; keepalive 128; }
  server { listen 127.0.0.1:$nginx_port; keepalive_requests 100000;
    location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
taskset -c 0 nginx -c "$work/proxy.conf" & pids+=($!)
nginx_master=$!

haproxy_port=$(stockade_free_port)
cat > "$work/haproxy.cfg" <<CFG
global
  maxconn 4096
  nbthread 1
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  http-reuse always
frontend bench
  bind 127.0.0.1:$haproxy_port
  default_backend up
backend up
  server up 127.0.0.1:$upstream_port
CFG
taskset -c 0 haproxy -db -f "$work/haproxy.cfg" > "$work/haproxy.out" 2>&1 & pids+=($!)
haproxy_pid=$!

# One Stockade per fence store, each in front of the same upstream.
start_stockade() { # $1 = name, $2 = store block (YAML flow mapping), [$3 = jar, $4 = JVM options]
  local port; port=$(stockade_free_port)     # -> sets port_<name> and pid_<name>
  cat > "$work/$1.yaml" <<YAML
server: {host: 127.0.0.1, port: $port}
store: $2
policies:
  - name: docs
    match: {path: "/docs/{id}"}
    scope: docs/{id}
    backend: {type: http, url: "http://127.0.0.1:$upstream_port", settle: 1s, max-connections: 256}
YAML
  # shellcheck disable=SC2086 # the JVM options are a list of options
  taskset -c 0 "$JAVA_HOME/bin/java" -Xmx1g -XX:+ExitOnOutOfMemoryError ${4-${PROXY_JAVA_OPTS:-}} -Dstockade.decision.level=OFF \
    -Djava.util.logging.config.file="$work/logging.properties" -jar "${3:-$jar}" --config "$work/$1.yaml" > "$work/$1.out" 2> "$work/$1.err" & pids+=($!)
  eval "port_$1=$port pid_$1=$!"
}
# Per-request decision lines off (a log shipper's cost is not the proxy's); warnings still go to stderr.
printf '%s\n' 'handlers=java.util.logging.ConsoleHandler' '.level=WARNING' 'stockade.decision.level=OFF' > "$work/logging.properties"

TARGETS=${TARGETS:-"direct nginx haproxy vertx memory steady postgres etcd"}
uses() { # $1 = a proxy: is it measured? (steady measures the memory proxy, baseline-steady the baseline one)
  [[ " $TARGETS " == *" $1 "* || " $TARGETS " == *" $1-steady "* ]] || { [ "$1" = memory ] && [[ " $TARGETS " == *" steady "* ]]; }
}
uses memory && start_stockade memory "{type: memory, journal: $work/journal}"
if uses baseline; then
  # The same memory-store proxy from another build (BASELINE_JAR), measured in the same run for before/after.
  start_stockade baseline "{type: memory, journal: $work/journal-baseline}" "${BASELINE_JAR:?BASELINE_JAR names the jar of the baseline build}" \
    "${BASELINE_JAVA_OPTS-${PROXY_JAVA_OPTS:-}}"
fi
if [[ " $TARGETS " == *" vertx "* ]]; then
  # The JVM peer: vertx-http-proxy on one event loop, forwarding the same PUTs to the same upstream, no fence.
  if [ ! -d bench/vertx-peer/target/libs ]; then
    echo "bench: building the Vert.x peer (bench/vertx-peer)" >&2
    mvn -B -q -f bench/vertx-peer/pom.xml package >&2
  fi
  port_vertx=$(stockade_free_port)
  taskset -c 0 "$JAVA_HOME/bin/java" -Xmx1g ${PROXY_JAVA_OPTS:-} -cp "bench/vertx-peer/target/classes:bench/vertx-peer/target/libs/*" \
    io.stockade.bench.peer.VertxPeer "$port_vertx" "$upstream_port" > "$work/vertx.out" 2>&1 & pids+=($!)
  pid_vertx=$!
fi
if [[ " $TARGETS " == *" postgres "* ]]; then
  psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'stockade_bench'" | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE stockade_bench"
  psql -h 127.0.0.1 -U postgres -d stockade_bench -qc "DROP TABLE IF EXISTS stockade_fences" 2>/dev/null || true
  start_stockade postgres "{type: postgres, datasource: {url: 'jdbc:postgresql://127.0.0.1:5432/stockade_bench', user: postgres, pool-size: 32}}"
fi
if [[ " $TARGETS " == *" etcd "* ]]; then
  etcd_client=$(stockade_free_port); etcd_peer=$(stockade_free_port)
  taskset -c 0 etcd --name bench --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$etcd_client" \
    --advertise-client-urls "http://127.0.0.1:$etcd_client" --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" --initial-cluster "bench=http://127.0.0.1:$etcd_peer" \
    --initial-cluster-state new > "$work/etcd.log" 2>&1 & pids+=($!)
  stockade_wait_port "$etcd_client"
  start_stockade etcd "{type: etcd, endpoints: [http://127.0.0.1:$etcd_client]}"
fi

stockade_wait_port "$upstream_port"; stockade_wait_port "$nginx_port"; stockade_wait_port "$haproxy_port"
for t in memory baseline postgres etcd vertx; do
  if uses "$t"; then eval "stockade_wait_port \$port_$t"; fi
done
nginx_pid=$(pgrep -P "$nginx_master" | head -1) # the worker does the proxying; the master only supervises
sleep 1.5 # serialized policies open after their settle time


run_wrk() { # $1 = url, $2 = connections -> "rps p50 p99 non2xx requests"
  STEADY=${STEADY:-0} taskset -c 1 wrk -t1 -c"$2" -d"$DURATION" --timeout 10s -s bench/put.lua "$1" 2>&1 \
    | sed -n 's/^BENCH rps=\([^ ]*\) p50_ms=\([^ ]*\) p99_ms=\([^ ]*\) non2xx=\([^ ]*\) requests=\([^ ]*\)$/\1 \2 \3 \4 \5/p'
}

results="$work/results.txt"
: > "$results"
echo "warming up the proxies (JIT) ..." >&2
for t in memory baseline postgres etcd vertx; do
  if uses "$t"; then eval "DURATION=${WARMUP:-15s} run_wrk http://127.0.0.1:\$port_$t 32 >/dev/null"; fi
done

for c in $CONNECTIONS; do
  for r in $(seq 1 "$REPEATS"); do
    for target in $TARGETS; do
      steady=0
      case $target in
        direct) url="http://127.0.0.1:$upstream_port"; pid="" ;;
        nginx) url="http://127.0.0.1:$nginx_port"; pid=$nginx_pid ;;
        haproxy) url="http://127.0.0.1:$haproxy_port"; pid=$haproxy_pid ;;
        steady) url="http://127.0.0.1:$port_memory"; pid=$pid_memory; steady=1 ;;
        baseline-steady) url="http://127.0.0.1:$port_baseline"; pid=$pid_baseline; steady=1 ;;
        *) eval "url=http://127.0.0.1:\$port_$target pid=\$pid_$target" ;;
      esac
      before=0; [ -n "$pid" ] && before=$(stockade_cpu_ticks "$pid")
      perf_pid=""
      if [ -n "$pid" ] && [ "${SYSCALLS:-0}" = 1 ]; then # system calls of the proxy's process, counted by the kernel
        perf stat -x, -e raw_syscalls:sys_enter,context-switches -p "$pid" -o "$work/perf.txt" & perf_pid=$!
      fi
      read -r rps p50 p99 non2xx requests < <(STEADY=$steady run_wrk "$url" "$c") \
        || { echo "bench: wrk gave no result for $target at $url" >&2; exit 1; }
      cpu_us="-"; sys_req="-"
      if [ -n "$pid" ]; then
        after=$(stockade_cpu_ticks "$pid")
        cpu_us=$(stockade_us_per_request $((after - before)) "$requests")
      fi
      if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid"; wait "$perf_pid" || true
        sys_req=$(stockade_perf_per_request "$work/perf.txt" "$requests")
      fi
      echo "$c $r $target $rps $p50 $p99 $non2xx $cpu_us $sys_req" | tee -a "$results" >&2
    done
  done
done

echo
echo "Stockade bench, $(date -u +%Y-%m-%dT%H:%MZ), DURATION=$DURATION REPEATS=$REPEATS BODY_BYTES=$BODY_BYTES, $(nproc) cores"
echo "median of repeats; servers on CPU 0, wrk on CPU 1"
printf '%-6s %-9s %10s %9s %9s %8s %10s %12s\n' conns target rps p50_ms p99_ms non2xx cpu_us/req syscalls/cs_per_req
for c in $CONNECTIONS; do
  for target in $TARGETS; do
    awk -v c="$c" -v t="$target" '$1 == c && $3 == t' "$results" | sort -k4 -n | awk -v n="$REPEATS" 'NR == int((n + 1) / 2)' \
      | awk '{ printf "%-6s %-9s %10.0f %9.3f %9.3f %8s %10s %12s\n", $1, $3, $4, $5, $6, $7, $8, $9 }'
  done
  awk -v c="$c" '$1 == c' "$results" | awk -v c="$c" '
    { rps[$3] = rps[$3] " " $4; p99[$3] = p99[$3] " " $6; cpu[$3] = cpu[$3] " " $8 }
    function median(list,   a, k) { k = split(list, a, " "); asort(a); return a[int((k + 1) / 2)] }
    function ratio(x, y,   a, b) { if (x == "" || y == "") return "n/a"; a = median(x); b = median(y); return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
    END {
      printf "ratios at %s connections: memory/nginx rps %s (target >= 0.80), cpu/req %s (target <= 1.5), p99 %s (target <= 1.5); steady/nginx rps %s, cpu/req %s, p99 %s; haproxy/nginx rps %s; nginx/direct rps %s",
        c, ratio(rps["memory"], rps["nginx"]), ratio(cpu["memory"], cpu["nginx"]), ratio(p99["memory"], p99["nginx"]),
        ratio(rps["steady"], rps["nginx"]), ratio(cpu["steady"], cpu["nginx"]), ratio(p99["steady"], p99["nginx"]),
        ratio(rps["haproxy"], rps["nginx"]), ratio(rps["nginx"], rps["direct"])
      if ("baseline" in rps) printf ", baseline/nginx rps %s, memory/baseline rps %s, baseline/nginx p99 %s",
        ratio(rps["baseline"], rps["nginx"]), ratio(rps["memory"], rps["baseline"]), ratio(p99["baseline"], p99["nginx"])
      if ("vertx" in rps) printf ", memory/vertx rps %s (target >= 1.0), cpu/req %s (target <= 1.0); steady/vertx rps %s, cpu/req %s, p99 %s (target <= 1.0)",
        ratio(rps["memory"], rps["vertx"]), ratio(cpu["memory"], cpu["vertx"]), ratio(rps["steady"], rps["vertx"]),
        ratio(cpu["steady"], cpu["vertx"]), ratio(p99["steady"], p99["vertx"])
      if ("postgres" in rps) printf ", postgres-store/memory rps %s", ratio(rps["postgres"], rps["memory"])
      if ("etcd" in rps) printf ", etcd-store/memory rps %s", ratio(rps["etcd"], rps["memory"])
      printf "\n"
    }'
done

# The chart: requests/s, CPU per request and p99 of each target, medians, a bar group per connection count.
if [ -n "${CHART:-}" ]; then
  for c in $CONNECTIONS; do
    for target in $TARGETS; do
      awk -v c="$c" -v t="$target" '$1 == c && $3 == t' "$results" | sort -k4 -n | awk -v n="$REPEATS" 'NR == int((n + 1) / 2)' \
        | awk '{ print $1 "-" $3, $4, ($8 == "-" ? 0 : $8), $6 }'
    done
  done > "$work/chart.dat"
  gnuplot <<PLOT
set terminal svg size 900,720 dynamic font "sans,11"
set output "$CHART"
set multiplot layout 2,1 title "Stockade bench $(date -u +%Y-%m-%d): pass-through, fencing on (connections-target)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -30
set ylabel "requests/s (median)"
set y2label "proxy CPU µs per request (median)"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set key top right
plot "$work/chart.dat" using 2:xtic(1) title "requests/s" axes x1y1, "" using 3 title "CPU µs/request" axes x1y2
unset y2label
unset y2tics
set ytics mirror
set ylabel "p99 ms (median of repeats)"
plot "$work/chart.dat" using 4:xtic(1) title "p99 latency" linecolor rgb "#c0504d"
unset multiplot
PLOT
  echo "chart: $CHART" >&2
fi

# Stale rejections: tokens below what the runs above raised, refused by the memory store's map or the token cache
# in front of PostgreSQL and etcd, without a store round trip.
echo
echo "stale-token rejections (every answer 409), ${DURATION}, 128 connections:"
for target in memory baseline postgres etcd; do
  [[ " $TARGETS " == *" $target "* ]] || continue
  eval "url=http://127.0.0.1:\$port_$target"
  read -r rps p50 p99 non2xx requests < <(STALE=1 SCOPES=1000 run_wrk "$url" 128) # scopes the runs above raised
  printf '  %-9s %10.0f rps  p99 %7.3f ms  refused %s of %s\n' "$target" "$rps" "$p99" "$non2xx" "$requests"
done

# The backends that fence in their own storage, each against the same storage directly, in the same run.
stockade_bench_cleanup; trap - EXIT
if [ "${BACKENDS:-yes}" = yes ]; then
  echo
  echo "== postgres backend vs the bare write over JDBC (bench/postgres.sh)"
  bench/postgres.sh 16 5 2 2>&1 | grep -v '^WARNING\|^\[' || echo "bench: postgres backend benchmark failed" >&2
  if [ -x bench/s3.sh ]; then
    echo
    echo "== s3 backend vs the same S3 server directly (bench/s3.sh)"
    bench/s3.sh 2>&1 | grep -v '^WARNING\|^\[' || echo "bench: s3 backend benchmark failed" >&2
  fi
fi

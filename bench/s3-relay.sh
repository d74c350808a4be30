#!/usr/bin/env bash
# What does the S3 backend cost on a GET? Stockade and s3proxy each in its own process, wrk GETs of one object
# straight to s3proxy and through the proxy, alternating in one run; every figure a ratio to the direct one.
#
#   bench/s3-relay.sh                              # SIZES="4k 4m" DURATION=10s REPEATS=3 CONNECTIONS=16 WARMUP=20s
#   SYSCALLS=1 bench/s3-relay.sh                   # also count system calls and context switches per request
#                                                  # (perf stat on the proxy and on s3proxy, as bench/run.sh does)
#   JAR=/tmp/copy/stockade-proxy.jar bench/s3-relay.sh      # another build (its libs/ beside it)
#   S3PROXY_CLASSPATH="$(cat cp.txt)" bench/s3-relay.sh     # a class path holding org.gaul:s3proxy 3.0.0
#   PROFILE=1 REPEATS=0 SIZES=4m bench/s3-relay.sh # no measured runs; profile the GET of the last size (PROFILE_SIZE):
#                                                  # strace of the proxy's reads and writes for STRACE_SECONDS (1)
#                                                  # (and of s3proxy's, serving it directly), then a
#                                                  # JFR CPU-time recording (jdk.CPUTimeSample) of JFR_SECONDS (15),
#                                                  # each during its own unmeasured load; files in PROFILE_DIR
#   PROXY_JAVA_OPTS="..." bench/s3-relay.sh        # extra JVM options for the proxy
#   BASELINE_JAR=/elsewhere/stockade-proxy.jar bench/s3-relay.sh   # before/after: a second proxy from another build
#   BASELINE_JAVA_OPTS="-Dx=y" bench/s3-relay.sh   # ... or the same jar with other JVM options; target "baseline",
#                                                  # measured in the same alternation (direct, proxy, baseline)
#
# s3proxy 3.0.0 (transient, in-memory blob store; SigV4 authorization on) is started standalone and Stockade (S3
# backend, memory store with a journal, decision log off, unsigned-reads: forward) in front of it; one bucket and
# one public-read object per size are written to s3proxy directly (curl --aws-sigv4). wrk sends the same anonymous
# GET to both: s3proxy serves a public object to anyone, and the proxy forwards an unsigned read unsigned, so the
# store does the same work on either path. Both servers are pinned to CPU 0, wrk to CPU 1 (taskset): the proxied
# path shares CPU 0 between the proxy and s3proxy, as the direct one gives it all to s3proxy. Prints per target
# rps, MiB/s, p50, p99, CPU time per request of the proxy and of s3proxy (from /proc), how busy CPU 0 and CPU 1
# were, and proxy/direct ratios. Stops every process it started. See docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven

DURATION=${DURATION:-10s}
REPEATS=${REPEATS:-3}
CONNECTIONS=${CONNECTIONS:-16}
SIZES=${SIZES:-"4k 4m"}
WARMUP=${WARMUP:-20s}
ACCESS_KEY=bench-key
SECRET_KEY=bench-secret

for tool in wrk taskset curl; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing (apt-get install wrk util-linux curl)" >&2; exit 1; }
done
if [ "${SYSCALLS:-0}" = 1 ] && ! command -v perf >/dev/null; then
  echo "bench: SYSCALLS=1 needs perf (apt-get install linux-perf)" >&2; exit 1
fi
if [ "${PROFILE:-0}" = 1 ] && ! command -v strace >/dev/null; then
  echo "bench: PROFILE=1 needs strace (apt-get install strace)" >&2; exit 1
fi

jar=${JAR:-proxy/target/stockade-proxy.jar}
if [ ! -f "$jar" ]; then
  mvn -B -q -DskipTests package -pl policies,proxy -am
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg) # before anything starts
stockade_bench_workdir stockade-s3relay

# s3proxy's class path: given, or the one scripts/s3proxy.sh keeps (resolved from its own POM on first use). The
# proxy's test class path would need the reactor's sibling modules installed, which a fresh clone's are not.
if [ -n "${S3PROXY_CLASSPATH:-}" ]; then
  s3cp=$S3PROXY_CLASSPATH
else
  if [ ! -s scripts/s3proxy/target/s3proxy.classpath ]; then
    echo "bench: resolving s3proxy's class path (mvn -f scripts/s3proxy/pom.xml)..." >&2
    mvn -B -q -Dstyle.color=never -f scripts/s3proxy/pom.xml dependency:build-classpath \
        -Dmdep.outputFile=target/s3proxy.classpath >&2
  fi
  s3cp=$(cat scripts/s3proxy/target/s3proxy.classpath)
fi

jvm_options=()
if [ "$(stockade_jdk_major "$JAVA_HOME")" -ge 24 ]; then
  jvm_options+=(--sun-misc-unsafe-memory-access=allow) # Guava's warning on JDK 24+, noise
fi

# s3proxy: its log to a file only (scripts/s3proxy.sh says why: its stderr would recurse into its logger).
s3_port=$(stockade_free_port)
cat > "$work/s3proxy.properties" <<PROPERTIES
s3proxy.endpoint=http://127.0.0.1:$s3_port
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$ACCESS_KEY
s3proxy.credential=$SECRET_KEY
s3proxy.ignore-unknown-headers=true
jclouds.provider=transient
jclouds.identity=$ACCESS_KEY
jclouds.credential=$SECRET_KEY
PROPERTIES
cat > "$work/s3proxy-logging.properties" <<LOGGING
handlers=java.util.logging.FileHandler
.level=WARNING
java.util.logging.FileHandler.pattern=$work/s3proxy.log
java.util.logging.FileHandler.formatter=java.util.logging.SimpleFormatter
LOGGING
taskset -c 0 "$JAVA_HOME/bin/java" -Xmx1g "${jvm_options[@]}" -Djava.util.logging.config.file="$work/s3proxy-logging.properties" \
  -cp "$s3cp" org.gaul.s3proxy.Main --properties "$work/s3proxy.properties" > "$work/s3proxy.out" 2> "$work/s3proxy.err" & pids+=($!)
s3_pid=$!

# Stockade: the S3 backend in front of it; anonymous GETs forwarded unsigned (the store's ACLs answer them).
# Per-request decision lines off (a log shipper's cost is not the proxy's); warnings still go to stderr.
printf '%s\n' 'handlers=java.util.logging.ConsoleHandler' '.level=WARNING' 'stockade.decision.level=OFF' > "$work/logging.properties"
stockade_wait_port "$s3_port" "$s3_pid" "$work/s3proxy.err"
start_stockade() { # $1 = name, $2 = jar, $3 = JVM options -> sets port_<name> and pid_<name>
  local port; port=$(stockade_free_port)
  cat > "$work/$1.yaml" <<YAML
server: {host: 127.0.0.1, port: $port}
store: {type: memory, journal: $work/journal-$1}
policies:
  - name: s3
    match: {path: "/{path...}"}
    scope: s3
    backend:
      type: s3
      endpoint: http://127.0.0.1:$s3_port
      access-key: $ACCESS_KEY
      secret-key: $SECRET_KEY
      auth: sigv4
      unsigned-reads: forward
      clients:
        - {access-key: app-key, secret-key: app-secret}
YAML
  # shellcheck disable=SC2086 # the JVM options are a list of options
  taskset -c 0 "$JAVA_HOME/bin/java" -Xmx1g -XX:+ExitOnOutOfMemoryError $3 -Dstockade.decision.level=OFF \
    -Djava.util.logging.config.file="$work/logging.properties" -jar "$2" --config "$work/$1.yaml" \
    > "$work/$1.out" 2> "$work/$1.err" & pids+=($!)
  eval "port_$1=$port pid_$1=$!"
  stockade_wait_port "$port" "$!" "$work/$1.err"
}
TARGETS="direct proxy"
start_stockade proxy "$jar" "${PROXY_JAVA_OPTS:-}"
proxy_port=$port_proxy proxy_pid=$pid_proxy
if [ -n "${BASELINE_JAR:-}" ] || [ -n "${BASELINE_JAVA_OPTS+set}" ]; then
  start_stockade baseline "${BASELINE_JAR:-$jar}" "${BASELINE_JAVA_OPTS-${PROXY_JAVA_OPTS:-}}"
  TARGETS="direct proxy baseline"
fi

# The objects, written straight to s3proxy (signed by curl; public-read so that an anonymous GET is served).
bytes_of() { # 4k -> 4096, 4m -> 4194304
  local n=${1%[kKmM]}
  case $1 in *[kK]) echo $((n * 1024)) ;; *[mM]) echo $((n * 1024 * 1024)) ;; *) echo "$1" ;; esac
}
s3_signed() { # curl arguments: a request to s3proxy signed with SigV4
  curl -sS -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -H "x-amz-acl: public-read" "$@"
}
code=$(s3_signed -X PUT "http://127.0.0.1:$s3_port/bench")
[ "$code" = 200 ] || { echo "bench: creating the bucket answered $code" >&2; exit 1; }
for size in $SIZES; do
  head -c "$(bytes_of "$size")" /dev/urandom > "$work/object-$size"
  code=$(s3_signed -T "$work/object-$size" "http://127.0.0.1:$s3_port/bench/object-$size")
  [ "$code" = 200 ] || { echo "bench: writing object-$size answered $code" >&2; exit 1; }
  for port in "$s3_port" "$proxy_port" ${port_baseline:-}; do # the same bytes back, every way
    curl -sS -o "$work/check" "http://127.0.0.1:$port/bench/object-$size"
    cmp -s "$work/check" "$work/object-$size" || { echo "bench: GET object-$size from port $port differs" >&2; exit 1; }
  done
done

cat > "$work/report.lua" <<'LUA'
done = function(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format("BENCH rps=%.2f p50_ms=%.3f p99_ms=%.3f non2xx=%d errors=%d requests=%d\n",
    summary.requests / seconds, latency:percentile(50) / 1000, latency:percentile(99) / 1000, e.status,
    e.connect + e.read + e.write + e.timeout, summary.requests))
end
LUA
run_wrk() { # $1 = url, $2 = duration -> "rps p50 p99 non2xx errors requests"
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$2" --timeout 10s -s "$work/report.lua" "$1" 2>&1 \
    | sed -n 's/^BENCH rps=\([^ ]*\) p50_ms=\([^ ]*\) p99_ms=\([^ ]*\) non2xx=\([^ ]*\) errors=\([^ ]*\) requests=\([^ ]*\)$/\1 \2 \3 \4 \5 \6/p'
}
url_of() { # $1 = target, $2 = size
  if [ "$1" = direct ]; then echo "http://127.0.0.1:$s3_port/bench/object-$2"; else eval "echo http://127.0.0.1:\$port_$1/bench/object-$2"; fi
}
cpu_busy() { awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

echo "warming up (JIT): ${WARMUP} through each proxy and 5s direct per size ..." >&2
for size in $SIZES; do
  for target in ${TARGETS#direct }; do run_wrk "$(url_of "$target" "$size")" "$WARMUP" >/dev/null; done
  run_wrk "$(url_of direct "$size")" 5s >/dev/null
done

results="$work/results.txt"
: > "$results"
start_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ) # the measured runs
for r in $(seq 1 "$REPEATS"); do
  for size in $SIZES; do
    for target in $TARGETS; do
      pid=""; [ "$target" != direct ] && eval "pid=\$pid_$target"
      s3_before=$(stockade_cpu_ticks "$s3_pid"); proxy_before=0; [ -n "$pid" ] && proxy_before=$(stockade_cpu_ticks "$pid")
      read -r busy0_before total0_before < <(cpu_busy 0); read -r busy1_before total1_before < <(cpu_busy 1)
      perf_pids=()
      if [ "${SYSCALLS:-0}" = 1 ]; then # the kernel's counts, per process
        perf stat -x, -e raw_syscalls:sys_enter,context-switches -p "$s3_pid" -o "$work/perf-s3.txt" & perf_pids+=($!)
        if [ -n "$pid" ]; then
          perf stat -x, -e raw_syscalls:sys_enter,context-switches -p "$pid" -o "$work/perf-proxy.txt" & perf_pids+=($!)
        fi
        pids+=("${perf_pids[@]}")
      fi
      read -r rps p50 p99 non2xx errors requests < <(run_wrk "$(url_of "$target" "$size")" "$DURATION") \
        || { echo "bench: wrk gave no result for $target $size" >&2; exit 1; }
      s3_after=$(stockade_cpu_ticks "$s3_pid"); proxy_after=0; [ -n "$pid" ] && proxy_after=$(stockade_cpu_ticks "$pid")
      read -r busy0_after total0_after < <(cpu_busy 0); read -r busy1_after total1_after < <(cpu_busy 1)
      for p in "${perf_pids[@]}"; do kill -INT "$p"; wait "$p" || true; done
      s3_us=$(stockade_us_per_request $((s3_after - s3_before)) "$requests")
      proxy_us="-"; [ -n "$pid" ] && proxy_us=$(stockade_us_per_request $((proxy_after - proxy_before)) "$requests")
      cpu0=$(awk -v b=$((busy0_after - busy0_before)) -v t=$((total0_after - total0_before)) 'BEGIN { printf "%.0f", 100 * b / (t > 0 ? t : 1) }')
      cpu1=$(awk -v b=$((busy1_after - busy1_before)) -v t=$((total1_after - total1_before)) 'BEGIN { printf "%.0f", 100 * b / (t > 0 ? t : 1) }')
      proxy_sys="-"; s3_sys="-"
      if [ "${SYSCALLS:-0}" = 1 ]; then
        s3_sys=$(stockade_perf_per_request "$work/perf-s3.txt" "$requests")
        [ -n "$pid" ] && proxy_sys=$(stockade_perf_per_request "$work/perf-proxy.txt" "$requests")
      fi
      echo "$size $r $target $rps $p50 $p99 $non2xx $errors $requests $proxy_us $s3_us $proxy_sys $s3_sys $cpu0 $cpu1" \
        | tee -a "$results" >&2
    done
  done
done

if [ "$REPEATS" -gt 0 ]; then
  echo
  echo "Stockade S3 GET relay bench, $start_utc (load average before: $load_before), DURATION=$DURATION REPEATS=$REPEATS"
  echo "CONNECTIONS=$CONNECTIONS WARMUP=$WARMUP, $(nproc) cores; median of repeats; s3proxy and the proxy on CPU 0, wrk on CPU 1"
  [[ " $TARGETS " == *" baseline "* ]] && echo "proxy: ${jar} ${PROXY_JAVA_OPTS:-}; baseline: ${BASELINE_JAR:-$jar} ${BASELINE_JAVA_OPTS-${PROXY_JAVA_OPTS:-}}"
  printf '%-5s %-8s %9s %8s %8s %9s %6s %9s %9s %13s %13s %5s %5s\n' size target rps MiB/s p50_ms p99_ms bad \
    proxy_us s3_us proxy_sys/cs s3_sys/cs cpu0% cpu1%
  for size in $SIZES; do
    bytes=$(bytes_of "$size")
    for target in $TARGETS; do
      awk -v s="$size" -v t="$target" '$1 == s && $3 == t' "$results" | sort -k4 -g \
        | awk -v n="$REPEATS" 'NR == int((n + 1) / 2)' \
        | awk -v b="$bytes" '{ printf "%-5s %-8s %9.0f %8.1f %8.3f %9.3f %6d %9s %9s %13s %13s %5s %5s\n",
            $1, $3, $4, $4 * b / 1048576, $5, $6, $7 + $8, $10, $11, $12, $13, $14, $15 }'
    done
    awk -v s="$size" '$1 == s' "$results" | awk -v s="$size" '
      { rps[$3] = rps[$3] " " $4; p50[$3] = p50[$3] " " $5; p99[$3] = p99[$3] " " $6; all[$3] = all[$3] " " sprintf("%.0f", $4) }
      function median(list,   a, k) { k = split(list, a, " "); asort(a); return a[int((k + 1) / 2)] }
      function ratio(x, y,   a, b) { a = median(x); b = median(y); return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
      END {
        printf "  %s: proxy/direct rps %s (target >= 0.90), p50 %s, p99 %s; rps per repeat direct%s, proxy%s", s,
          ratio(rps["proxy"], rps["direct"]), ratio(p50["proxy"], p50["direct"]), ratio(p99["proxy"], p99["direct"]),
          all["direct"], all["proxy"]
        if ("baseline" in rps) printf "; baseline/direct rps %s, proxy/baseline rps %s, p50 %s, p99 %s; baseline%s",
          ratio(rps["baseline"], rps["direct"]), ratio(rps["proxy"], rps["baseline"]), ratio(p50["proxy"], p50["baseline"]),
          ratio(p99["proxy"], p99["baseline"]), all["baseline"]
        printf "\n"
      }'
  done
fi

# Profiles of the proxied GET of the last size, each during its own unmeasured load.
if [ "${PROFILE:-0}" = 1 ]; then
  size=${PROFILE_SIZE:-${SIZES##* }}
  out=${PROFILE_DIR:-$work/profile}
  mkdir -p "$out"
  url=$(url_of proxy "$size")
  # (a) which reads and writes carry the body: strace for STRACE_SECONDS during 15 s of load, of the
  # proxy during the proxied GET and of s3proxy during the direct one
  strace_run() { # $1 = name, $2 = pid, $3 = its listening port, $4 = its upstream's port, $5 = url
    echo "profile: strace of $1, ${STRACE_SECONDS:-1}s, GET $size ..." >&2
    run_wrk "$5" 15s > "$work/wrk-strace-$1.txt" & wrk_pid=$!; pids+=($wrk_pid)
    sleep 3
    # which socket is which: inode -> ports, so the fds can be told apart (its clients' connections, its upstream's)
    for fd in /proc/"$2"/fd/*; do
      printf '%s %s\n' "${fd##*/}" "$(readlink "$fd" 2>/dev/null || true)"
    done > "$out/fds-$1.txt"
    cat /proc/net/tcp /proc/net/tcp6 > "$out/tcp-$1.txt" 2>/dev/null || true
    strace -f -qq -s 0 -e trace=read,write,readv,writev,sendfile,recvfrom,sendto,sendmsg,recvmsg,pread64,pwrite64 \
      -p "$2" -o "$out/strace-$1.txt" & strace_pid=$!; pids+=($strace_pid)
    for _ in $(seq 1 100); do [ -s "$out/strace-$1.txt" ] && break; sleep 0.1; done # attached to every thread
    sleep "${STRACE_SECONDS:-1}"
    kill -INT "$strace_pid"; wait "$strace_pid" || true
    wait "$wrk_pid" || true
    python3 - "$out" "$1" "$3" "$4" <<'PY' | tee "$out/strace-summary-$1.txt"
import collections, re, sys
out, name, own_port, upstream_port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
inode_ports = {}
for line in open(f"{out}/tcp-{name}.txt"):
    f = line.split()
    if len(f) > 9 and ":" in f[1] and f[0] != "sl":
        inode_ports[f[9]] = (int(f[1].rsplit(":", 1)[1], 16), int(f[2].rsplit(":", 1)[1], 16))
role = {}
for line in open(f"{out}/fds-{name}.txt"):
    fd, _, target = line.strip().partition(" ")
    m = re.match(r"socket:\[(\d+)\]", target)
    if m and m.group(1) in inode_ports:
        local, remote = inode_ports[m.group(1)]
        role[fd] = "client" if local == own_port else "upstream" if remote == upstream_port else "socket"
    else:
        role[fd] = "file" if target.startswith("/") else "other"
call = re.compile(r"^(\d+)\s+(\w+)\((\d+),.*?(?:, (\d+))?\)\s+=\s+(-?\d+)")
unfinished = re.compile(r"^(\d+)\s+(\w+)\((\d+),.*<unfinished \.\.\.>$")
resumed = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>.*?(?:, (\d+))?\)\s+=\s+(-?\d+)")
pending = {}
stats = collections.defaultdict(lambda: [0, 0, collections.Counter(), 0])
for line in open(f"{out}/strace-{name}.txt"):
    line = line.strip()
    m = call.match(line)
    if m:
        _, call_name, fd, asked, ret = m.groups()
    elif (m := unfinished.match(line)):
        pending[m.group(1)] = (m.group(2), m.group(3))
        continue
    elif (m := resumed.match(line)) and m.group(1) in pending:
        call_name, fd = pending.pop(m.group(1))
        asked, ret = m.group(3), m.group(4)
    else:
        continue
    s = stats[(role.get(fd, "?"), call_name)]
    s[0] += 1
    r = int(ret)
    if r < 0:
        s[3] += 1
        continue
    s[1] += r
    s[2][(int(asked) if asked else -1, r)] += 1
print("strace of %s: reads and writes by peer (client: its clients' connections; upstream: s3proxy)" % name)
print("%-8s %-7s %7s %7s %12s  %s" % ("peer", "call", "calls", "failed", "bytes", "most frequent (asked -> returned) x calls"))
for (peer, call_name), (n, total, sizes, errs) in sorted(stats.items(), key=lambda kv: -kv[1][1]):
    top = ", ".join("%s->%d x%d" % ("-" if a < 0 else a, r, c) for (a, r), c in sizes.most_common(4))
    print("%-8s %-7s %7d %7d %12d  %s" % (peer, call_name, n, errs, total, top))
PY
  }
  strace_run proxy "$proxy_pid" "$proxy_port" "$s3_port" "$url"
  strace_run s3proxy "$s3_pid" "$s3_port" 0 "$(url_of direct "$size")"
  # (b) where the proxy's CPU goes: JFR CPU-time samples for JFR_SECONDS of load
  jfr_seconds=${JFR_SECONDS:-15}
  echo "profile: JFR jdk.CPUTimeSample, ${jfr_seconds}s, GET $size ..." >&2
  "$JAVA_HOME/bin/jfr" configure --input profile jdk.CPUTimeSample#enabled=true jdk.CPUTimeSample#throttle=2ms \
    --output "$out/cpu.jfc" >/dev/null
  run_wrk "$url" "$((jfr_seconds + 4))s" > "$work/wrk-jfr.txt" & wrk_pid=$!; pids+=($wrk_pid)
  sleep 1
  "$JAVA_HOME/bin/jcmd" "$proxy_pid" JFR.start name=relay settings="$out/cpu.jfc" duration="${jfr_seconds}s" \
    filename="$out/relay.jfr" >/dev/null
  wait "$wrk_pid" || true
  sleep 1
  echo "profile: under JFR: $(cat "$work/wrk-jfr.txt")" >&2
  "$JAVA_HOME/bin/jfr" print --stack-depth 64 --events jdk.CPUTimeSample "$out/relay.jfr" > "$out/samples.txt"
  python3 - "$out/samples.txt" <<'PY' | tee "$out/jfr-summary.txt"
import collections, re, sys
frame = re.compile(r"^\s+([\w$.<>/]+)\(.*\)(\s+line:.*)?$")
samples, stack, inside = [], [], False
for line in open(sys.argv[1]):
    if line.startswith("jdk.CPUTimeSample"):
        stack, inside = [], False
    elif "stackTrace = [" in line:
        inside = True
    elif inside and line.strip() == "]":
        inside = False
        samples.append(stack)
    elif inside:
        m = frame.match(line)
        if m:
            stack.append(m.group(1))
        elif line.strip() == "...":
            stack.append("...")
n = len(samples) or 1
print("JFR jdk.CPUTimeSample: %d samples" % len(samples))
print("top frames (self):")
for f, c in collections.Counter(s[0] for s in samples if s).most_common(20):
    print("  %5.1f%%  %s" % (100 * c / n, f))
print("inclusive (any frame of the stack), proxy and relay methods:")
incl = collections.Counter()
for s in samples:
    for f in set(s):
        incl[f] += 1
keep = [f for f, c in incl.most_common() if re.search(r"stockade|helidon|transferTo|SocketOutputStream|NioSocketImpl|SocketDispatcher|arraycopy", f)]
for f in keep[:40]:
    print("  %5.1f%%  %s" % (100 * incl[f] / n, f))
PY
  echo "profile: files in $out" >&2
fi

# Shared by the repository's scripts. Source it; do not run it.

# Finds a JDK 21 or newer: $JAVA_HOME if it is one, else the newest under /usr/lib/jvm (STOCKADE_JDK_DIR: another
# directory of JDKs). Exports JAVA_HOME.
stockade_find_jdk() {
  local candidate version best="" best_version=0
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; then
    version=$(stockade_jdk_major "$JAVA_HOME")
    if [ "${version:-0}" -ge 21 ]; then
      export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
      return 0
    fi
    echo "stockade: JAVA_HOME=$JAVA_HOME is JDK ${version:-?}; looking for a JDK 21+ under" \
         "${STOCKADE_JDK_DIR:-/usr/lib/jvm}" >&2
  fi
  local found=""
  for candidate in "${STOCKADE_JDK_DIR:-/usr/lib/jvm}"/*; do
    [ -x "$candidate/bin/java" ] || continue
    version=$(stockade_jdk_major "$candidate")
    found="$found${found:+, }${version:-?} at $candidate"
    [ -x "$candidate/bin/javac" ] || continue
    if [ "${version:-0}" -ge 21 ] && [ "$version" -gt "$best_version" ]; then
      best="$candidate"; best_version="$version"
    fi
  done
  if [ -z "$best" ]; then
    if [ -z "$found" ] && command -v java >/dev/null; then
      found="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1) at $(command -v java)"
    fi
    echo "stockade: Stockade needs Java 21+: found ${found:-none} (JAVA_HOME: ${JAVA_HOME:-unset}); a JDK 21+ is" \
         "needed (bin/stockade builds the jars)." >&2
    echo "          Install one (e.g. 'apt-get install openjdk-21-jdk-headless') or set JAVA_HOME to one." >&2
    return 1
  fi
  export JAVA_HOME="$best" PATH="$best/bin:$PATH"
}

# Prints the major version of the JDK in $1.
stockade_jdk_major() {
  local release="$1/release" v
  if [ -f "$release" ]; then
    v=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$release")
  else
    v=$("$1/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  fi
  echo "${v:-0}"
}

# Maven 3.8's bundled Guava warns about sun.misc.Unsafe on JDK 24+; the warning is noise, not a problem.
stockade_quiet_maven() {
  if [ "$(stockade_jdk_major "$JAVA_HOME")" -ge 24 ]; then
    export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
  fi
}

# Builds modules (mvn package, tests skipped) showing Maven's progress on stderr: what it builds and downloads (a
# first build with an empty ~/.m2 downloads for minutes), warnings, errors and the result, without colour codes
# or the per-plugin chatter. Usage: stockade_build MODULE[,MODULE...]
# -Dmaven.test.skip=true, as deploy/Dockerfile: the tests are neither run nor compiled (compiling them was half the
# CPU of a first build: proxy,client-sdk,conformance from a clean clone 29.6 s of CPU with -DskipTests, 16.1 s
# without the test code, 2026-12-06). -Dstockade.quick leaves the gates out (the root POM says why).
stockade_build() {
  command -v mvn >/dev/null || { echo "stockade: Maven is missing (apt-get install maven)" >&2; return 1; }
  stockade_quiet_maven
  mvn -B -Dstyle.color=never -Dmaven.test.skip=true -Dstockade.quick package -pl "$1" -am 2>&1 \
    | sed -u 's/\x1b\[[0-9;]*m//g' \
    | grep --line-buffered -E '^\[(ERROR|WARNING)\]|Downloading from|Downloaded from|Building Stockade|BUILD|Total time' >&2
}

# A free TCP port on loopback (the kernel's choice; free when this returns, not reserved). The system's python3
# when there is one (/usr/bin/python3: only the standard library is needed): a version manager's shim first on the
# PATH (pyenv's) costs ~0.55 s of CPU a call and seconds on a loaded host, against 0.06 s (measured 2026-12-06 on the
# CI machine, whose PATH has pyenv's shims; an example takes up to four ports).
stockade_free_port() {
  local python=python3
  [ -x /usr/bin/python3 ] && python=/usr/bin/python3
  "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits up to 10 s for something to listen on loopback port $1.
# stockade_wait_port PORT [PID [LOG]]: waits up to 60 s for 127.0.0.1:PORT to accept; with PID, gives up as soon as
# that process has exited, and prints LOG (its stderr) when it did.
stockade_wait_port() {
  for _ in $(seq 1 600); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then
      echo "port $1 did not open: process $2 exited" >&2
      [ -n "${3:-}" ] && [ -f "$3" ] && tail -20 "$3" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "port $1 did not open within 60 s" >&2
  return 1
}

# A bench's temporary directory ($work) and the processes it starts (append each PID to $pids): when the script
# exits, or when it calls stockade_bench_cleanup itself, every process is stopped (TERM, then KILL after half a
# second) and the directory removed (kept with KEEP_WORK=1). $1 = the directory's name prefix.
stockade_bench_workdir() {
  work=$(mktemp -d "/tmp/$1.XXXXXX")
  pids=()
  trap stockade_bench_cleanup EXIT
}

stockade_bench_cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  sleep 0.5
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  if [ -n "${KEEP_WORK:-}" ]; then echo "bench: kept $work" >&2; else rm -rf "$work"; fi
  pids=()
}

# A process's CPU time so far, in clock ticks (user and system: /proc/PID/stat). $1 = PID.
stockade_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# CPU ticks of every PostgreSQL server process so far, the children it reaped included (cutime, cstime).
stockade_pg_cpu_ticks() {
  local p sum=0
  for p in $(pgrep -x postgres); do
    sum=$((sum + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$sum"
}

# CPU ticks spent over some requests, in microseconds a request. $1 = ticks, $2 = requests.
stockade_us_per_request() {
  awk -v d="$1" -v t="$(getconf CLK_TCK)" -v n="$2" 'BEGIN { printf "%.1f", d / t * 1e6 / (n > 0 ? n : 1) }'
}

# What `perf stat -x, -e raw_syscalls:sys_enter,context-switches` counted, per request: "syscalls/switches".
# $1 = perf's output file, $2 = requests.
stockade_perf_per_request() {
  awk -F, -v n="$2" '/raw_syscalls/ { s = $1 } /context-switches/ { c = $1 }
    END { printf "%.2f/%.2f", s / (n > 0 ? n : 1), c / (n > 0 ? n : 1) }' "$1"
}

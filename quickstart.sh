#!/usr/bin/env bash
# Runs Stockade on embedded defaults: the memory fence store journaled under ./stockade-data, fencing
# PUT and DELETE of /files/{path...} on the local directory ./stockade-data/files (policies/examples/quickstart.yaml).
# Builds the proxy first if needed. Extra arguments go to the proxy (e.g. --port 9090).
# ./quickstart.sh --fresh first removes what an earlier run kept (./stockade-data/journal and ./stockade-data/files).
# ./quickstart.sh --example http-upstream|observe|postgres|replicas|s3|sql runs another example with what it needs
# (scripts/example.sh), from a clean state of its own every run.
set -euo pipefail
cd "$(dirname "$0")"
# bin/stockade finds a JDK 21+, says which, builds the proxy when it is missing or older than its sources (showing
# Maven's progress), and runs it.
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  cat <<'USAGE'
usage: ./quickstart.sh [--fresh] [PROXY OPTIONS...]
       ./quickstart.sh --example http-upstream|observe|postgres|replicas|s3

  (none)      run the proxy on policies/examples/quickstart.yaml (127.0.0.1:8080), building it first if needed;
              its fences and files are kept in ./stockade-data/journal and ./stockade-data/files across runs
  --fresh     remove ./stockade-data/journal and ./stockade-data/files first (the README's session assumes it)
  --example NAME
              run another example with what it needs on free loopback ports, data in ./stockade-data/NAME/
              (emptied every run), and print a session to try; Ctrl-C stops everything it started:
                http-upstream  two small HTTP stores, one honouring If-Match
                observe        observe mode: nothing refused, would-be refusals counted
                postgres       a database stockade_example on the machine's PostgreSQL (PGHOST, PGUSER)
                replicas       two replicas sharing one etcd (docs/replicas.md)
                s3             s3proxy behind policies/examples/s3.yaml (docs/s3.md)
  PROXY OPTIONS
              passed to the proxy, e.g. --port 9090 or --management-port 9091 (bin/stockade proxy --help lists them)
  --help      this text
USAGE
  exit 0
fi
if [ "${1:-}" = "--example" ]; then
  shift
  exec scripts/example.sh "$@"     # another example with what it needs: http-upstream, observe, postgres, ...
fi
if [ "${1:-}" = "--fresh" ]; then
  shift
  rm -rf ./stockade-data/journal ./stockade-data/files
  echo "stockade: --fresh: removed ./stockade-data/journal and ./stockade-data/files" >&2
elif [ -e ./stockade-data/journal ]; then
  # the proxy keeps its fences across restarts, as it must; say so, since the README's session assumes none
  # the stored files, not the backend's own tree (.stockade/: the token sidecars and temp files)
  files=$(find ./stockade-data/files -path ./stockade-data/files/.stockade -prune -o -type f -print 2>/dev/null | wc -l)
  echo "stockade: kept from an earlier run: ./stockade-data/journal (the highest tokens seen) and" \
       "./stockade-data/files ($files files); ./quickstart.sh --fresh starts clean" >&2
fi
exec bin/stockade --config policies/examples/quickstart.yaml "$@"

#!/usr/bin/env bash
# Runs Stockade on embedded defaults: the memory fence store journaled under ./stockade-data, fencing
# PUT and DELETE of /files/{path...} on the local directory ./stockade-data/files (policies/examples/quickstart.yaml).
# Builds the proxy first if needed. Extra arguments go to the proxy (e.g. --port 9090).
# ./quickstart.sh --example http-upstream|observe|postgres runs another example with what it needs (scripts/example.sh).
set -euo pipefail
cd "$(dirname "$0")"
# bin/stockade finds a JDK 21+, says which, builds the proxy when it is missing or older than its sources (showing
# Maven's progress), and runs it.
if [ "${1:-}" = "--example" ]; then
  shift
  exec scripts/example.sh "$@"     # another example with what it needs: http-upstream, observe, postgres
fi
exec bin/stockade --config policies/examples/quickstart.yaml "$@"

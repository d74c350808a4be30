#!/usr/bin/env bash
# Runs Stockade on embedded defaults: the memory fence store journaled under ./stockade-data, fencing
# PUT and DELETE of /files/{path...} on the local directory ./stockade-data/files (policies/examples/quickstart.yaml).
# Builds the proxy first if needed. Extra arguments go to the proxy (e.g. --port 9090).
set -euo pipefail
cd "$(dirname "$0")"
# bin/stockade finds a JDK 21+, says which, builds the proxy when it is missing or older than its sources (showing
# Maven's progress), and runs it.
exec bin/stockade --config policies/examples/quickstart.yaml "$@"

#!/usr/bin/env bash
# Writes client-sdk/api/baseline.jar: the library's classes (io.stockade.client, not the CLI or the launcher) of
# the build at hand, the API the japicmp check of client-sdk's build compares every later build with. Run it at a
# release, after reviewing target/japicmp/*.diff of the build before; commit the jar with the release.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk
mvn -B -q -DskipTests -Djapicmp.skip=true package -pl client-sdk -am
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && "$JAVA_HOME/bin/jar" xf "$OLDPWD/client-sdk/target/stockade-client-sdk.jar" io/stockade/client)
rm -rf "$work/io/stockade/client/cli" "$work/io/stockade/client/launch"
mkdir -p client-sdk/api
# a fixed date on every entry: the same classes give the same jar
"$JAVA_HOME/bin/jar" --create --date=2026-01-01T00:00:00Z --no-manifest --file client-sdk/api/baseline.jar -C "$work" io
echo "client-sdk/api/baseline.jar: $(unzip -l client-sdk/api/baseline.jar | tail -1)"

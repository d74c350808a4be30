#!/usr/bin/env bash
# Runs s3proxy 3.0.0 (the S3 server the tests use, org.gaul:s3proxy) standalone over a local directory, as the
# store behind policies/examples/s3.yaml: http://127.0.0.1:9000, access key minioadmin / secret minioadmin (the
# example's defaults). For trying the S3 backend on one machine; not a production store (docs/s3.md).
#
#   scripts/s3proxy.sh [DIR]     data in DIR/data (default ./stockade-data/s3proxy), its log in DIR/s3proxy.log
#
# Environment: S3PROXY_PORT (9000), S3_ACCESS_KEY / S3_SECRET_KEY (minioadmin), S3PROXY_BUCKETS (buckets to create
# at start, space-separated; default "reports"), STOCKADE_JAVA_OPTS (extra JVM options, as for bin/stockade).
#
# Why a launcher: s3proxy's Main sends its standard error to its own logger when it has no console (a service, a
# pipe, a test); with a logger that writes to standard error (slf4j-jdk14 with the JDK's default console handler)
# every line recurses until a StackOverflowError. Here its log goes to a file only.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
stockade_find_jdk
stockade_quiet_maven
dir="${1:-./stockade-data/s3proxy}"
mkdir -p "$dir/data"
dir="$(cd "$dir" && pwd)"
port="${S3PROXY_PORT:-9000}"
cp_file=scripts/s3proxy/target/s3proxy.classpath
if [ -n "${S3PROXY_CLASSPATH:-}" ]; then
  classpath="$S3PROXY_CLASSPATH"        # a class path holding s3proxy 3.0.0 (S3StandaloneIT passes its own)
else
  # s3proxy's own pom (scripts/s3proxy/pom.xml, outside the reactor): no module of the project is built or needed,
  # so this works from a fresh clone (Maven downloads s3proxy and its libraries into ~/.m2 the first time)
  if [ ! -s "$cp_file" ] || [ pom.xml -nt "$cp_file" ] || [ scripts/s3proxy/pom.xml -nt "$cp_file" ]; then
    command -v mvn >/dev/null || { echo "stockade: Maven is missing (apt-get install maven)" >&2; exit 1; }
    echo "stockade: resolving s3proxy and its libraries (mvn -f scripts/s3proxy/pom.xml)..." >&2
    mvn -B -q -Dstyle.color=never -f scripts/s3proxy/pom.xml dependency:build-classpath \
        -Dmdep.outputFile=target/s3proxy.classpath >&2
  fi
  classpath="$(cat "$cp_file")"
fi
# filesystem-nio2, not filesystem: the latter lists a key's directories as zero-byte objects ("2026/") that a
# delete can never remove, so aws s3 rb --force and rclone purge fail on it. Both keep metadata (the token) in
# user extended attributes, which the file system under DIR must support (ext4 and xfs do).
cat > "$dir/s3proxy.properties" <<PROPERTIES
s3proxy.endpoint=http://127.0.0.1:$port
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=${S3_ACCESS_KEY:-minioadmin}
s3proxy.credential=${S3_SECRET_KEY:-minioadmin}
s3proxy.ignore-unknown-headers=true
jclouds.provider=filesystem-nio2
jclouds.filesystem.basedir=$dir/data
PROPERTIES
for bucket in ${S3PROXY_BUCKETS-reports}; do
  mkdir -p "$dir/data/$bucket"        # the filesystem store's buckets are directories
done
cat > "$dir/logging.properties" <<LOGGING
handlers=java.util.logging.FileHandler
.level=INFO
java.util.logging.FileHandler.pattern=$dir/s3proxy.log
java.util.logging.FileHandler.append=true
java.util.logging.FileHandler.formatter=java.util.logging.SimpleFormatter
LOGGING
jvm_options=()
read -r -a jvm_options <<<"${STOCKADE_JAVA_OPTS:-}"   # extra JVM options, as bin/stockade's (split on white space)
if [ "$(stockade_jdk_major "$JAVA_HOME")" -ge 24 ]; then
  jvm_options+=(--sun-misc-unsafe-memory-access=allow)   # Guava's warning on JDK 24+, noise
fi
echo "stockade: s3proxy on http://127.0.0.1:$port, data in $dir/data, log in $dir/s3proxy.log" >&2
exec "$JAVA_HOME/bin/java" "${jvm_options[@]}" -Djava.util.logging.config.file="$dir/logging.properties" \
     -cp "$classpath" org.gaul.s3proxy.Main --properties "$dir/s3proxy.properties"

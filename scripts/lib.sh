# Shared by the repository's scripts. Source it; do not run it.

# Finds a JDK 21 or newer: $JAVA_HOME if it is one, else the newest under /usr/lib/jvm. Exports JAVA_HOME.
stockade_find_jdk() {
  local candidate version best="" best_version=0
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; then
    version=$(stockade_jdk_major "$JAVA_HOME")
    if [ "${version:-0}" -ge 21 ]; then
      export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
      return 0
    fi
    echo "stockade: JAVA_HOME=$JAVA_HOME is JDK ${version:-?}; looking for a JDK 21+ under /usr/lib/jvm" >&2
  fi
  for candidate in /usr/lib/jvm/*; do
    [ -x "$candidate/bin/javac" ] || continue
    version=$(stockade_jdk_major "$candidate")
    if [ "${version:-0}" -ge 21 ] && [ "$version" -gt "$best_version" ]; then
      best="$candidate"; best_version="$version"
    fi
  done
  if [ -z "$best" ]; then
    echo "stockade: no JDK 21 or newer found (JAVA_HOME unset or too old, nothing suitable under /usr/lib/jvm)." >&2
    echo "          Install one (e.g. 'apt-get install openjdk-21-jdk-headless') or set JAVA_HOME." >&2
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

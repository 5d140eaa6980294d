#!/bin/bash
# Entrypoint of the OpenSearch image vectorpilot's tests build (test/harness/images). It keeps the
# part of the official opensearchproject/opensearch entrypoint's contract the operator relies
# on, so pods behave the same on either image:
#   - the home is /usr/share/opensearch, configuration in $OPENSEARCH_PATH_CONF (config/),
#     the JDK in jdk/, the process runs as uid 1000;
#   - OPENSEARCH_JAVA_OPTS is appended to the JVM options (heap, SIMD flags);
#   - every environment variable whose name looks like a setting (lower case with a dot,
#     e.g. node.name) becomes -E<name>=<value>;
#   - DISABLE_SECURITY_PLUGIN=true disables the security plugin when the image has one
#     (this image has none: the plugin is not obtainable from Maven Central here);
#   - any other command than "opensearch" is run as is.
set -e
export OPENSEARCH_HOME=/usr/share/opensearch
export OPENSEARCH_PATH_CONF=${OPENSEARCH_PATH_CONF:-$OPENSEARCH_HOME/config}
export JAVA_HOME=$OPENSEARCH_HOME/jdk

if [ "${1:-opensearch}" != opensearch ]; then
  exec "$@"
fi
shift || true

opts=()
while IFS='=' read -r -d '' name value; do
  if [[ $name =~ ^[a-z0-9_]+\.[a-z0-9_.]+$ ]]; then
    opts+=("-E$name=$value")
  fi
done < <(env -0)
if [ "${DISABLE_SECURITY_PLUGIN:-}" = true ] && [ -d "$OPENSEARCH_HOME/plugins/opensearch-security" ]; then
  opts+=("-Eplugins.security.disabled=true")
fi

# The JVM options of the distribution's jvm.options that matter in a container, then the
# user's (heap, SIMD) so they win.
# shellcheck disable=SC2086
exec "$JAVA_HOME/bin/java" \
  -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError -XX:+HeapDumpOnOutOfMemoryError -XX:HeapDumpPath=data \
  -Dfile.encoding=UTF-8 -Djava.io.tmpdir=/tmp \
  -Dlog4j2.disable.jmx=true -Dlog4j.shutdownHookEnabled=false \
  --enable-native-access=ALL-UNNAMED \
  ${OPENSEARCH_JAVA_OPTS:-} \
  -Dopensearch.path.home="$OPENSEARCH_HOME" -Dopensearch.path.conf="$OPENSEARCH_PATH_CONF" \
  -Dopensearch.distribution.type=docker -Dopensearch.bundled_jdk=true \
  -cp "$OPENSEARCH_HOME/lib/*" org.opensearch.bootstrap.OpenSearch "${opts[@]}" "$@"

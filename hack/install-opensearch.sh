#!/usr/bin/env bash
# Assembles a real OpenSearch home with the k-NN plugin from Maven Central artifacts (the
# machine cannot download a distribution tarball): lib/, modules/<name>/ and plugins/<name>/
# laid out as the tarball lays them out, with the plugin descriptors Maven lacks written
# here, and the k-NN native libraries built from source (hack/install-knn-native.sh).
# Idempotent: the assembled home is cached under bin/opensearch-$OPENSEARCH_VERSION.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

KNN_VERSION=${KNN_VERSION:-$OPENSEARCH_VERSION.0}
OPENSEARCH_ARTIFACT_VERSIONS=${OPENSEARCH_ARTIFACT_VERSIONS:-}
# LOG4J_VERSION (hack/versions.env) must match the log4j-api the server depends on.
MAVEN_DEPENDENCY_PLUGIN=3.8.1
home="$BIN_DIR/opensearch-$OPENSEARCH_VERSION"
# assembled: the home is complete, with the same stand-ins (.complete lists them).
assembled() { [ -f "$home/.complete" ] && [ "$(cat "$home/.complete")" = "$OPENSEARCH_ARTIFACT_VERSIONS" ]; }
# install_native adds the k-NN engines' native libraries, which Maven's k-NN zip lacks,
# built from source for the one k-NN version that source is of.
install_native() {
  [ "$KNN_VERSION" = "$KNN_NATIVE_VERSION" ] || return 0
  bash "$ROOT_DIR/hack/install-knn-native.sh" "$home" >/dev/null
}
assembled && { install_native; echo "$home"; exit 0; }
# One assembly at a time: tests call this script too (internal/managed's keystore test), and
# two runs sharing the stage folder below removed each other's files.
mkdir -p "$BIN_DIR"
exec 9>"$BIN_DIR/.opensearch-$OPENSEARCH_VERSION.lock"
flock 9
assembled && { install_native; echo "$home"; exit 0; }

major=${OPENSEARCH_VERSION%%.*}
# component table: folder | plugin classname ("-" for lib/) | extended plugins | artifacts.
# Artifacts are group:artifact[:version[:type]]; the version defaults to OPENSEARCH_VERSION.
components() {
  if [ "$major" -lt 3 ]; then
    # The 2.x line (the major upgrade's start): module classes before 3.0 renamed them
    # *ModulePlugin, no agent (3.0's replacement of the Java security manager), and
    # without repository-s3, search-pipeline-common and transport-grpc, which the registry
    # refuses at 2.19.x (measured 2026-11-26).
    cat <<TABLE
lib|-|-|org.opensearch:opensearch org.opensearch:opensearch-plugin-classloader org.apache.logging.log4j:log4j-core:$LOG4J_VERSION_2X
modules/transport-netty4|org.opensearch.transport.Netty4Plugin|-|org.opensearch.plugin:transport-netty4-client
modules/lang-painless|org.opensearch.painless.PainlessPlugin|-|org.opensearch.plugin:lang-painless
modules/analysis-common|org.opensearch.analysis.common.CommonAnalysisPlugin|lang-painless|org.opensearch.plugin:analysis-common
modules/mapper-extras|org.opensearch.index.mapper.MapperExtrasPlugin|-|org.opensearch.plugin:mapper-extras-client
modules/reindex|org.opensearch.index.reindex.ReindexPlugin|-|org.opensearch.plugin:reindex-client
plugins/opensearch-knn|from-zip|-|org.opensearch.plugin:opensearch-knn:$KNN_VERSION:zip
TABLE
    return
  fi
  cat <<TABLE
lib|-|-|org.opensearch:opensearch org.opensearch:opensearch-plugin-classloader org.opensearch:opensearch-agent-bootstrap org.apache.logging.log4j:log4j-core:$LOG4J_VERSION
modules/transport-netty4|org.opensearch.transport.Netty4ModulePlugin|-|org.opensearch.plugin:transport-netty4-client
modules/lang-painless|org.opensearch.painless.PainlessModulePlugin|-|org.opensearch.plugin:lang-painless
modules/analysis-common|org.opensearch.analysis.common.CommonAnalysisModulePlugin|lang-painless|org.opensearch.plugin:analysis-common
modules/mapper-extras|org.opensearch.index.mapper.MapperExtrasModulePlugin|-|org.opensearch.plugin:mapper-extras-client
modules/reindex|org.opensearch.index.reindex.ReindexModulePlugin|-|org.opensearch.plugin:reindex-client
modules/search-pipeline-common|org.opensearch.search.pipeline.common.SearchPipelineCommonModulePlugin|-|org.opensearch.plugin:search-pipeline-common
modules/transport-grpc|org.opensearch.transport.grpc.GrpcPlugin|-|org.opensearch.plugin:transport-grpc org.opensearch.plugin:transport-grpc-spi
plugins/repository-s3|org.opensearch.repositories.s3.S3RepositoryPlugin|-|org.opensearch.plugin:repository-s3
plugins/opensearch-knn|from-zip|-|org.opensearch.plugin:opensearch-knn:$KNN_VERSION:zip
TABLE
}

# OPENSEARCH_ARTIFACT_VERSIONS ("artifact:version,...") stands in another version of an
# artifact the registry does not serve at OPENSEARCH_VERSION.
artifact_version() {
  local pair
  for pair in ${OPENSEARCH_ARTIFACT_VERSIONS//,/ }; do
    [ "${pair%%:*}" = "$1" ] && { echo "${pair#*:}"; return; }
  done
  echo "$OPENSEARCH_VERSION"
}

stage="$BIN_DIR/opensearch-$OPENSEARCH_VERSION.stage"
rm -rf "$stage" && mkdir -p "$stage/pom"

# One Maven reactor fetches every component with its runtime dependencies in a single run.
write_poms() {
  local modules="" i=0
  while IFS='|' read -r folder _ _ artifacts; do
    i=$((i + 1))
    local deps=""
    for a in $artifacts; do
      IFS=: read -r g art v t <<<"$a"
      v=${v:-$(artifact_version "$art")}
      deps+="<dependency><groupId>$g</groupId><artifactId>$art</artifactId><version>$v</version><type>${t:-jar}</type></dependency>"
    done
    mkdir -p "$stage/pom/c$i"
    cat >"$stage/pom/c$i/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>vectorpilot.assembly</groupId><artifactId>c$i</artifactId><version>1</version><packaging>pom</packaging>
<dependencies>$deps</dependencies>
<build><plugins><plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>$MAVEN_DEPENDENCY_PLUGIN</version>
<configuration><outputDirectory>$stage/home/$folder</outputDirectory><includeScope>runtime</includeScope></configuration></plugin></plugins></build>
</project>
POM
    modules+="<module>c$i</module>"
  done <<<"$table"
  cat >"$stage/pom/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>vectorpilot.assembly</groupId><artifactId>reactor</artifactId><version>1</version><packaging>pom</packaging>
<modules>$modules</modules></project>
POM
}

# The Java release a module needs: 3.x runs on 21+; the 2.x line on 11 to 23 (JDK 24
# dropped the security manager it runs under).
java_version=21
[ "$major" -lt 3 ] && java_version=11

# write_descriptor writes the plugin descriptor Maven lacks and, for the 2.x line, the
# module's security policy (hack/opensearch/policies-2.x/), which the distribution carries.
write_descriptor() {
  local dir=$1 name=$2 classname=$3 extended=$4
  local policy="$ROOT_DIR/hack/opensearch/policies-2.x/$name.policy"
  if [ "$major" -lt 3 ] && [ -f "$policy" ]; then cp "$policy" "$dir/plugin-security.policy"; fi
  {
    echo "description=$name (assembled from Maven Central by vectorpilot)"
    echo "version=$OPENSEARCH_VERSION"
    echo "name=$name"
    echo "classname=$classname"
    echo "java.version=$java_version"
    echo "opensearch.version=$OPENSEARCH_VERSION"
    [ "$extended" != "-" ] && echo "extended.plugins=$extended"
    echo "has.native.controller=false"
  } >"$dir/plugin-descriptor.properties"
}

# A jar already on a parent class loader (lib/ or an extended plugin) must not be loaded
# again, in any version: OpenSearch refuses to start on duplicate classes ("jar hell"). A
# component of another version (OPENSEARCH_ARTIFACT_VERSIONS) brings its own server jars.
artifact_name() { sed -E 's/-[0-9][^/]*\.jar$//' <<<"$(basename "$1")"; }
drop_duplicates() {
  local dir=$1; shift
  local jar parent other
  for jar in "$dir"/*.jar; do
    local name; name=$(artifact_name "$jar")
    for parent in "$@"; do
      [ "$parent" = "$dir" ] && continue
      for other in "$parent"/"$name"-[0-9]*.jar; do
        if [ -f "$other" ] && [ "$(artifact_name "$other")" = "$name" ]; then rm -f "$jar"; continue 3; fi
      done
    done
  done
}

# Read once here, so a failure in it (an unset version) stops the script.
table=$(components)
# The 2.x line's JDK (hack/opensearch.sh picks it by the version's major).
if [ "$major" -lt 3 ]; then apt_install openjdk-17-jre-headless; fi

log "fetching OpenSearch $OPENSEARCH_VERSION and k-NN $KNN_VERSION from Maven Central"
write_poms
# Maven's output goes to stderr: callers read this script's stdout as the home's path (quiet
# Maven still writes colour resets there, which made hack/opensearch.sh's classpath
# "\e[0m…/lib/*" on a cold install: ClassNotFoundException at the first start).
(cd "$stage/pom" && mvn -q -B -fae dependency:copy-dependencies >&2) || die "Maven could not fetch the OpenSearch artifacts (see above)"

h="$stage/home"
while IFS='|' read -r folder classname extended _; do
  [ "$folder" = lib ] && continue
  name=$(basename "$folder")
  if [ "$classname" = from-zip ]; then
    zip=$(ls "$h/$folder"/*.zip)
    (cd "$h/$folder" && unzip -q -o "$zip" && rm -f "$zip")
    extended=$(sed -n 's/^extended.plugins=//p' "$h/$folder/plugin-descriptor.properties" | tr ',' ' ')
  else
    write_descriptor "$h/$folder" "$name" "$classname" "$extended"
    extended=${extended//,/ }
  fi
  parents=("$h/lib")
  for e in $extended; do [ "$e" != - ] && parents+=("$h/modules/$e"); done
  drop_duplicates "$h/$folder" "${parents[@]}"
done <<<"$table"

[ -f "$h/lib/opensearch-$OPENSEARCH_VERSION.jar" ] || die "the assembled home has no lib/opensearch-$OPENSEARCH_VERSION.jar"
mkdir -p "$h/config" "$h/bin" "$h/logs"
cp "$ROOT_DIR/hack/opensearch/log4j2.properties" "$h/config/"
rm -rf "$home" && mv "$h" "$home" && rm -rf "$stage"
# What stood in for refused artifacts: a home assembled with others is assembled again.
echo "$OPENSEARCH_ARTIFACT_VERSIONS" >"$home/.complete"
log "OpenSearch home assembled in $home"
install_native
echo "$home"

#!/usr/bin/env bash
# Builds the k-NN plugin's native libraries (the faiss and nmslib engines' JNI layer) from the
# source k-NN $KNN_NATIVE_VERSION pins (../shared/knn-native: k-NN's jni/ with faiss and nmslib,
# the plugin's patches applied) and installs them into an assembled OpenSearch home the way
# the official distribution lays them out: plugins/opensearch-knn/lib/, with the OpenMP
# runtimes a minimal Debian lacks, each found through RUNPATH $ORIGIN; nodes put that folder
# on the JVM's library path (hack/opensearch.sh, and the e2e image's LD_LIBRARY_PATH as the
# official image sets it).
#
#   install-knn-native.sh HOME     install into HOME (an OpenSearch $KNN_NATIVE_VERSION home)
#   install-knn-native.sh          build only; prints the folder holding the libraries
#
# faiss is built once per CPU level, as k-NN's scripts/build.sh does: generic, avx2, avx512,
# avx512_spr (libopensearchknn_faiss[_<level>].so and libopensearchknn_simd[_<level>].so); the
# plugin loads the best its CPU check and the knn.faiss.<level>.disabled settings allow.
# KNN_NATIVE_VARIANTS lists the levels to build: "all" (the default: every level this CPU
# can run, as the official distribution carries every level — a pool may ask for any of them,
# and a node whose plugin picks a level whose library is missing dies at its first faiss
# graph with UnsatisfiedLinkError), "best" (generic and the best this CPU runs) or a list.
#
# Builds are cached outside the work tree (KNN_NATIVE_CACHE, by default ~/.cache/vectorpilot),
# keyed by the source's checksum, the compiler and the build options, so a fresh clone on the same
# machine builds nothing; a variant's folder is complete or absent.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

source_tar=${KNN_NATIVE_SOURCE:-$ROOT_DIR/../shared/knn-native/k-NN-$KNN_NATIVE_VERSION-jni-src.tar.gz}
KNN_NATIVE_VARIANTS=${KNN_NATIVE_VARIANTS:-all}
home=${1:-}

[ -f "$source_tar" ] || die "no k-NN $KNN_NATIVE_VERSION native source at $source_tar (../shared/knn-native)"
# faiss needs BLAS and LAPACK (linked statically, as k-NN's build does), which need a Fortran
# compiler; OpenMP comes with gcc.
apt_install cmake g++ gfortran libopenblas-dev liblapack-dev zlib1g-dev

# cpu_runs says whether this CPU passes the plugin's own check for a level
# (org.opensearch.knn.jni.PlatformUtils: the first "flags" line of /proc/cpuinfo).
cpu_runs() {
  local flags f
  flags=$(grep -m1 '^flags' /proc/cpuinfo)
  case $1 in
    generic) return 0 ;;
    avx2) set -- avx2 ;;
    avx512) set -- avx512f avx512cd avx512vl avx512dq avx512bw ;;
    avx512_spr) set -- avx512_fp16 avx512_bf16 avx512_vpopcntdq ;;
  esac
  for f in "$@"; do [[ " ${flags#*:} " == *" $f "* ]] || return 1; done
}
levels=(generic avx2 avx512 avx512_spr)
variants=()
case $KNN_NATIVE_VARIANTS in
  best)
    best=generic
    for l in "${levels[@]}"; do cpu_runs "$l" && best=$l; done
    variants=(generic)
    [ "$best" != generic ] && variants+=("$best") ;;
  all) for l in "${levels[@]}"; do cpu_runs "$l" && variants+=("$l"); done ;;
  *) read -ra variants <<<"$KNN_NATIVE_VARIANTS" ;;
esac
for v in "${variants[@]}"; do
  [[ " ${levels[*]} " == *" $v "* ]] || die "unknown k-NN native variant $v (want ${levels[*]}, default or all)"
done

# gcc 12.2 (Debian 12) cannot build the avx512_spr level (k-NN wants gcc >= 12.4 for
# -march=sapphirerapids' FP16 intrinsics); Debian serves clang 19, which can.
compiler_for() {
  if [ "$1" = avx512_spr ]; then
    apt_install clang-19 libomp-19-dev >&2
    echo "clang-19 clang++-19"
  else
    echo "gcc g++"
  fi
}

# recipe_of sets what a level is built with: the compilers (cc, cxx), the level's CMake
# options (flags) and targets; generic also builds the libraries that have no levels (util,
# common, nmslib). The cache key is taken from it, so a change of recipe builds again.
recipe_of() {
  read -r cc cxx <<<"$(compiler_for "$1")"
  targets=(opensearchknn_faiss opensearchknn_simd)
  case $1 in
    generic) flags=(-DAVX2_ENABLED=false -DAVX512_ENABLED=false -DAVX512_SPR_ENABLED=false)
      targets+=(opensearchknn_util opensearchknn_common opensearchknn_nmslib) ;;
    avx2) flags=(-DAVX2_ENABLED=true -DAVX512_ENABLED=false -DAVX512_SPR_ENABLED=false) ;;
    avx512) flags=(-DAVX2_ENABLED=true -DAVX512_ENABLED=true -DAVX512_SPR_ENABLED=false) ;;
    avx512_spr) flags=(-DAVX2_ENABLED=true -DAVX512_ENABLED=true -DAVX512_SPR_ENABLED=true) ;;
  esac
  # The patches are applied in the source already (APPLY_LIB_PATCHES=false); CONFIG_TEST off
  # keeps googletest's download out. RUNPATH is $ORIGIN alone, which finds util and OpenMP
  # beside each JNI library: CMake's build RUNPATH would add the build folder and the
  # compiler's library folder (LLVM's libomp), paths of this machine that let ldd here find
  # what a node's image lacks.
  flags+=(-DCMAKE_BUILD_TYPE=Release -DKNN_PLUGIN_VERSION="$KNN_NATIVE_VERSION" -DAPPLY_LIB_PATCHES=false
    -DCOMMIT_LIB_PATCHES=false -DCONFIG_FAISS=ON -DCONFIG_NMSLIB=ON -DCONFIG_TEST=OFF
    -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON -DCMAKE_INSTALL_RPATH="\$ORIGIN")
  key=$({ sha256sum "$source_tar" | cut -c1-64; "$cxx" --version | head -1; echo "${flags[*]} ${targets[*]}"; } | sha256sum | cut -c1-16)
}
cache_root=${KNN_NATIVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vectorpilot}/knn-native-$KNN_NATIVE_VERSION

# progress prints cmake's percentage at every tenth, so a cold build (minutes) shows it moves.
progress() {
  awk -v what="$1" 'match($0, /^\[ *[0-9]+%\]/) { p = int(substr($0, RSTART + 1, RLENGTH - 3) / 10) * 10; if (p > last) { last = p; printf "[install-knn-native.sh] %s: %d%%\n", what, p > "/dev/stderr"; fflush("/dev/stderr") } }'
}

# build_variant builds one level into $cache_root/<key>/<level> and prints that folder.
build_variant() {
  local v=$1 cc cxx flags targets key out work java_home started=$SECONDS
  recipe_of "$v"
  out="$cache_root/$key/$v"
  [ -f "$out/.complete" ] && { echo "$out"; return; }
  work=$(mktemp -d "$cache_root/.build-$v.XXXXXX")
  tar -xzf "$source_tar" -C "$work"
  log "building the k-NN $KNN_NATIVE_VERSION native libraries, $v level, with $cxx ($(nproc) cores; log: $work/build.log)"
  java_home=$(bash "$ROOT_DIR/hack/opensearch.sh" java-home)
  if ! (JAVA_HOME=$java_home CC=$cc CXX=$cxx cmake -S "$work/k-NN-$KNN_NATIVE_VERSION/jni" -B "$work/build" "${flags[@]}" >"$work/build.log" 2>&1 \
    && cmake --build "$work/build" -j "$(nproc)" --target "${targets[@]}" 2>&1 | tee -a "$work/build.log" | progress "$v level"; test "${PIPESTATUS[0]}" = 0); then
    tail -n 30 "$work/build.log" >&2
    die "building the $v level failed (log: $work/build.log)"
  fi
  # shellcheck disable=SC2016 # $ORIGIN is the linker's, literally
  if readelf -d "$work"/build/release/libopensearchknn_*.so | grep -E '\((RUN)?PATH\)' | grep -vqF '[$ORIGIN]'; then
    readelf -d "$work"/build/release/libopensearchknn_*.so | grep -E '\((RUN)?PATH\)' >&2
    die "the $v level's libraries look for libraries outside their own folder"
  fi
  rm -rf "$out" && mkdir -p "$out"
  cp "$work"/build/release/libopensearchknn_*.so "$out/"
  rm -rf "$work"
  echo "$((SECONDS - started))" >"$out/.build-seconds"
  touch "$out/.complete"
  log "built the $v level in $((SECONDS - started))s: $(cd "$out" && echo *.so)"
  echo "$out"
}

mkdir -p "$cache_root"
# One build at a time per cache: two would compile the same level twice.
exec 8>"$cache_root/.lock"
flock 8
dirs=()
for v in "${variants[@]}"; do dirs+=("$(build_variant "$v")"); done

if [ -z "$home" ]; then
  printf '%s\n' "${dirs[@]}"
  exit 0
fi
[ -f "$home/plugins/opensearch-knn/opensearch-knn-$KNN_NATIVE_VERSION.jar" ] \
  || die "$home has no k-NN $KNN_NATIVE_VERSION plugin: these libraries are built for that version's Java side"
lib="$home/plugins/opensearch-knn/lib"
# The runtime libraries the JNI libraries link beyond the C and C++ runtimes, which a minimal
# Debian (the e2e image's root filesystem) lacks, ride along as the official build ships its
# OpenMP: libgomp for the gcc-built levels, LLVM's libomp for the clang-built avx512_spr level.
# BLAS and LAPACK are static. test/harness/images refuses an image whose libraries still
# link something it lacks.
runtime=$(for d in "${dirs[@]}"; do ldd "$d"/*.so; done | awk '$3 ~ /^\// && $1 !~ /^(libc|libm|libmvec|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux-[^.]*|libopensearchknn_[a-z0-9_]*)\.so/ { print $3 }' | sort -u)
# Installed already from the same builds: nothing to do (nodes may be running from the home).
[ "$(cat "$lib/.built" 2>/dev/null)" = "${dirs[*]} $runtime" ] && exit 0
mkdir -p "$lib"
# place copies a file in by rename, never over a library a running node has mapped.
place() { cp -L "$1" "$lib/.$(basename "$1").tmp" && mv -f "$lib/.$(basename "$1").tmp" "$lib/$(basename "$1")"; }
for d in "${dirs[@]}"; do for f in "$d"/*.so; do place "$f"; done; done
for dep in $runtime; do place "$dep"; done
if ldd "$lib"/*.so | grep 'not found' >/dev/null; then
  ldd "$lib"/*.so >&2
  die "a k-NN native library in $lib links a library that is not there"
fi
echo "${dirs[*]} $runtime" >"$lib/.built"
log "k-NN native libraries (${variants[*]}) installed in $lib"

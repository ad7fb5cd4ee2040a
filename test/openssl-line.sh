#!/bin/bash
# openssl-line.sh: hwaf built and tested against another OpenSSL line (3.5,
# 3.6, 4.0, ...: the rows of test/openssl-lines), each in a Debian root made
# by tools/guest/make-root and cached with the kernels.
#
# Usage: test/openssl-line.sh LINE build BUILD_DIR
#          make the line's root (or find it made), then configure and build
#          hwaf in it: the source bound at /srv, BUILD_DIR at /opt (on the
#          host; the ctest fixture openssl-LINE.build); and the line's own
#          evp_test with its data (test/evp-data.sh: BUILD_DIR/evp-data)
#        test/openssl-line.sh LINE run BUILD_DIR -- CMD [ARGS...]
#          run CMD chrooted into the root with that build (in the guest:
#          the ctest entries kernel.openssl-LINE.*), with
#          HWAF_MODULE_DIR=/opt/modules, HWAF_TEST_TMPDIR=/opt/test/tmp,
#          OPENSSL=/usr/bin/openssl (the line's), HWAF_INFO=/opt/hwaf-info,
#          HWAF_APPS_RESULTS=/opt/apps-results and the caller's HWAF_*,
#          GTEST_* and KCAPI_* variables.  The root is only looked up
#          (make-root --lookup): the guest sees the cache read-only.
#        test/openssl-line.sh LINE root
#          print the root's directory (made when needed)
#        test/openssl-line.sh LINE apps KERNEL APP...
#          (inside the root, under run) the application tests
#          test/apps/APP.sh one after the other in one guest boot, each in
#          both modes (HWAF_APPS_MODE forced, then shipped), each to
#          its end whatever the others did, scratch data on the guest's
#          tmpfs, their table rows labelled KERNEL (the guest's kernel
#          line); fails when one failed
#
# A missing root or build fails the run with a message naming the cause.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)
tools=$src/tools/guest

usage() { sed -n '2,28s/^# \{0,1\}//p' "$0"; exit 2; }
[ $# -ge 2 ] || usage
line=$1 what=$2
shift 2

# The line's row: suite, entries, OpenSSL packages.
row=$(awk -v l="$line" '$1 == l { print $2, $3, $4 }' "$here/openssl-lines")
[ -n "$row" ] || { echo "openssl-line.sh: no line '$line' in test/openssl-lines" >&2; exit 2; }
read -r suite _ ossl <<<"$row"
# What the build and every test in the root need besides OpenSSL: the
# host's tools/deps list for the same purposes.
# (ccache: the builds of every clone share a compiler cache per line.)
packages=(build-essential cmake pkg-config libgtest-dev libkcapi-dev libfuse3-dev fuse3
    openvpn openssh-server openssh-client curl iproute2 python3 procps util-linux mawk
    diffutils ccache ${ossl//,/ })

case $what in
root) exec "$tools/make-root" --print "$suite" "${packages[@]}" ;;
apps)
    [ $# -ge 2 ] || usage
    kernel=$1
    shift
    rc=0
    for app in "$@"; do
        for mode in forced shipped; do
            echo "## test/apps/$app.sh ($mode)"
            HWAF_GUEST=1 HWAF_GUEST_KERNEL=$kernel HWAF_APPS_MODE=$mode sh "$src/test/apps/$app.sh" || rc=1
        done
    done
    exit $rc
    ;;
build | run) [ $# -ge 1 ] || usage ;;
*) echo "openssl-line.sh: unknown action '$what' (build, run, root or apps)" >&2; exit 2 ;;
esac
build=$1
shift

case $what in
build)
    root=$("$tools/make-root" --print "$suite" "${packages[@]}")
    mkdir -p "$build"
    build=$(cd "$build" && pwd)
    # The build's paths (module directory, test scratch) are those inside
    # the root: /opt.  -j: what the machine has.
    # The line's compiler cache, beside the host's (tools/ccache.sh), at
    # /mnt in the root: every clone builds at the same paths (/srv, /opt).
    . "$src/tools/ccache.sh"
    cc_dir=${HWAF_CCACHE_DIR:-/var/cache/hwaf-build/ccache}-openssl-$line
    mkdir -p "$cc_dir"
    "$tools/in-root" "$root" --bind "$src:/srv" --bind "$build:/opt" --bind "$cc_dir:/mnt" \
        --env "LINE=$line" --env CCACHE_DIR=/mnt --env CCACHE_MAXSIZE=1G -- sh -c '
        set -e
        echo "building hwaf against $(openssl version)"
        cmake -S /srv -B /opt -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHWAF_GUEST_TESTS=OFF \
            -DHWAF_BUILD_MAN=OFF -DCMAKE_C_COMPILER_LAUNCHER=ccache \
            -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/opt/configure.log 2>&1 || { cat /opt/configure.log; exit 1; }
        cmake --build /opt -j"$(nproc)" >/opt/build.log 2>&1 || { tail -n 60 /opt/build.log; exit 1; }
        if grep -E "warning:" /opt/build.log; then echo "the build against OpenSSL $LINE has warnings"; exit 1; fi
        test -f /opt/modules/hwaf.so && test -x /opt/test/hwaf-tests && test -x /opt/hwaf-info'
    # OpenSSL's own evp_test and data of this line (test/evp-data.sh).
    bash "$src/test/evp-data.sh" build "$build/evp-data" "$root"
    ;;
run)
    [ "${1:-}" != -- ] || shift
    [ $# -gt 0 ] || { echo "openssl-line.sh run: no command" >&2; exit 2; }
    root=$("$tools/make-root" --lookup "$suite" "${packages[@]}") ||
        { echo "FAIL - no OpenSSL $line root (ctest -R openssl-$line.build makes it)" >&2; exit 1; }
    [ -f "$build/modules/hwaf.so" ] ||
        { echo "FAIL - no OpenSSL $line build in $build (ctest -R openssl-$line.build)" >&2; exit 1; }
    build=$(cd "$build" && pwd)
    envs=()
    for v in $(compgen -e | grep -E '^(HWAF_|GTEST_|KCAPI_)' | grep -v '^HWAF_GUEST' || true); do
        envs+=(--env "$v=${!v}")
    done
    envs+=(--env HWAF_MODULE_DIR=/opt/modules --env HWAF_TEST_TMPDIR=/opt/test/tmp
        --env OPENSSL=/usr/bin/openssl --env HWAF_INFO=/opt/hwaf-info
        --env HWAF_APPS_RESULTS=/opt/apps-results)
    mkdir -p "$build/test/tmp"
    exec "$tools/in-root" "$root" --bind "$src:/srv" --bind "$build:/opt" "${envs[@]}" -- "$@"
    ;;
esac

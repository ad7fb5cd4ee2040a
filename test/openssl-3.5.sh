#!/bin/bash
# openssl-3.5.sh: hwaf built and tested against OpenSSL 3.5, in a Debian 13
# (trixie) root made by tools/guest/make-root and cached with the kernels.
#
# Usage: test/openssl-3.5.sh build BUILD_DIR
#          make the root (or find it made), then configure and build hwaf
#          in it: the source bound at /srv, BUILD_DIR at /opt (on the host;
#          the ctest fixture openssl-3.5.build)
#        test/openssl-3.5.sh run BUILD_DIR -- CMD [ARGS...]
#          run CMD chrooted into the root with that build (in the guest:
#          the ctest entries kernel.openssl-3.5.*), with
#          HWAF_MODULE_DIR=/opt/modules, HWAF_TEST_TMPDIR=/opt/test/tmp,
#          OPENSSL=/usr/bin/openssl (3.5), HWAF_INFO=/opt/hwaf-info,
#          HWAF_APPS_RESULTS=/opt/apps-results and the caller's HWAF_*,
#          GTEST_* and KCAPI_* variables.  The root is only looked up
#          (make-root --lookup): the guest sees the cache read-only.
#        test/openssl-3.5.sh root
#          print the root's directory (made when needed)
#        test/openssl-3.5.sh apps LINE APP...
#          (inside the root, under run) the application tests
#          test/apps/APP.sh one after the other in one guest boot, each to
#          its end whatever the others did, scratch data on the guest's
#          tmpfs, their table rows labelled LINE (the guest's kernel line);
#          fails when one failed
#
# A missing root or build fails the run with a message naming the cause.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)
tools=$src/tools/guest

# What the build and every test in the root need: the host's tools/deps
# list for the same purposes.
suite=trixie
packages=(build-essential cmake pkg-config libssl-dev openssl libgtest-dev
    libkcapi-dev libfuse3-dev fuse3 openvpn openssh-server openssh-client curl
    iproute2 python3 procps util-linux mawk diffutils)

usage() { sed -n '2,25s/^# \{0,1\}//p' "$0"; exit 2; }
[ $# -ge 1 ] || usage
what=$1
shift
case $what in
root) exec "$tools/make-root" --print "$suite" "${packages[@]}" ;;
apps)
    [ $# -ge 2 ] || usage
    line=$1
    shift
    rc=0
    for app in "$@"; do
        echo "## test/apps/$app.sh"
        HWAF_GUEST=1 HWAF_GUEST_KERNEL=$line sh "$src/test/apps/$app.sh" || rc=1
    done
    exit $rc
    ;;
build | run) [ $# -ge 1 ] || usage ;;
*) echo "openssl-3.5.sh: unknown action '$what' (build, run, root or apps)" >&2; exit 2 ;;
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
    "$tools/in-root" "$root" --bind "$src:/srv" --bind "$build:/opt" -- sh -c '
        set -e
        echo "building hwaf against $(openssl version)"
        cmake -S /srv -B /opt -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHWAF_GUEST_TESTS=OFF \
            -DHWAF_BUILD_MAN=OFF >/opt/configure.log 2>&1 || { cat /opt/configure.log; exit 1; }
        cmake --build /opt -j"$(nproc)" >/opt/build.log 2>&1 || { tail -n 60 /opt/build.log; exit 1; }
        if grep -E "warning:" /opt/build.log; then echo "the build against OpenSSL 3.5 has warnings"; exit 1; fi
        test -f /opt/modules/hwaf.so && test -x /opt/test/hwaf-tests && test -x /opt/hwaf-info'
    ;;
run)
    [ "${1:-}" != -- ] || shift
    [ $# -gt 0 ] || { echo "openssl-3.5.sh run: no command" >&2; exit 2; }
    root=$("$tools/make-root" --lookup "$suite" "${packages[@]}") ||
        { echo "FAIL - no OpenSSL 3.5 root (ctest -R openssl-3.5.build makes it)" >&2; exit 1; }
    [ -f "$build/modules/hwaf.so" ] ||
        { echo "FAIL - no OpenSSL 3.5 build in $build (ctest -R openssl-3.5.build)" >&2; exit 1; }
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

#!/bin/sh
# build_options_test.sh: the build options a packager sets, in the state the
# main build does not have.
#
# Usage: build_options_test.sh SOURCE_DIR MAIN_BUILD_DIR SCRATCH_DIR
#
# The main build has HWAF_WITH_DEVCRYPTO=ON, HWAF_WITH_KCAPI=AUTO (found),
# HWAF_GUEST_TESTS=ON; this configures and builds SCRATCH_DIR with
# HWAF_WITH_DEVCRYPTO=OFF, HWAF_WITH_KCAPI=OFF, HWAF_GUEST_TESTS=OFF,
# HWAF_BUILD_MAN=OFF and checks each option's effect in both trees:
#   - devcrypto: the OFF module says "this build has no /dev/crypto backend";
#     the ON module does not;
#   - libkcapi: the OFF hwaf-bench does not link libkcapi and reports it
#     absent; the ON one links it;
#   - guest: the OFF tree runs the kernel tests natively (kernel.native.*),
#     the ON tree in the guest (kernel.suite.6.1).
# Exit 0 pass, 1 fail.
set -u
src=${1:?source dir}
main=${2:?main build dir}
b=${3:?scratch build dir}
fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok   - $*"; }
bad() { fails=$((fails + 1)); echo "FAIL - $*"; }

rm -rf "$b"
if ! cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Debug -DHWAF_WITH_DEVCRYPTO=OFF \
    -DHWAF_WITH_KCAPI=OFF -DHWAF_GUEST_TESTS=OFF -DHWAF_BUILD_MAN=OFF >"$b.log" 2>&1; then
    sed 's/^/      /' "$b.log" | tail -20
    echo "FAIL - configure with the options off"
    exit 1
fi
if ! cmake --build "$b" -j2 --target hwaf hwaf-bench >>"$b.log" 2>&1; then
    sed 's/^/      /' "$b.log" | tail -20
    echo "FAIL - build hwaf and hwaf-bench with the options off"
    exit 1
fi
ok "configured and built with HWAF_WITH_DEVCRYPTO=OFF HWAF_WITH_KCAPI=OFF HWAF_GUEST_TESTS=OFF"

status() { # MODULE_DIR: the module's devcrypto status line
    OPENSSL_MODULES=$1 ${OPENSSL:-openssl} list -providers -verbose -provider hwaf 2>&1 | grep -i devcrypto | head -n 1
}
s_off=$(status "$b/modules")
s_on=$(status "$main/modules")
case $s_off in *"no /dev/crypto backend"*) ok "devcrypto OFF: $s_off" ;; *) bad "devcrypto OFF says '$s_off'" ;; esac
case $s_on in
"") bad "devcrypto ON: no status line" ;;
*"no /dev/crypto backend"*) bad "devcrypto ON says '$s_on'" ;;
*) ok "devcrypto ON: $s_on" ;;
esac

if ldd "$b/bench/hwaf-bench" | grep -q libkcapi; then bad "libkcapi OFF: hwaf-bench links libkcapi"
else ok "libkcapi OFF: hwaf-bench does not link libkcapi"; fi
if "$b/bench/hwaf-bench" --list --algs AES-128-CBC 2>&1 | grep -q "libkcapi.*not built in"; then
    ok "libkcapi OFF: hwaf-bench reports the peer absent"
else
    bad "libkcapi OFF: hwaf-bench --list does not report libkcapi as not built in"
fi
if ldd "$main/bench/hwaf-bench" | grep -q libkcapi; then ok "libkcapi ON: hwaf-bench links libkcapi"
else bad "libkcapi ON (found): hwaf-bench does not link libkcapi"; fi

(cd "$b" && ctest -N) >"$b.tests"
(cd "$main" && ctest -N) >"$main.tests.$$"
if grep -q 'kernel\.native\.gtest' "$b.tests" && ! grep -q 'kernel\.suite\.' "$b.tests"; then
    ok "guest OFF: kernel tests run natively"
else
    bad "guest OFF: $(grep -c 'Test *#' "$b.tests") tests, not the native set"
fi
if grep -q 'kernel\.suite\.6\.1$' "$main.tests.$$" && ! grep -q 'kernel\.native' "$main.tests.$$"; then
    ok "guest ON: kernel tests in the guest"
else
    bad "guest ON: the main tree does not list kernel.suite.6.1"
fi
rm -f "$main.tests.$$"
rm -rf "$b" "$b.log" "$b.tests"
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]

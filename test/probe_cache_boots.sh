#!/bin/bash
# probe_cache_boots.sh: the probe result hwaf-info --calibrate keeps in the
# calibration file serves the loads of that boot and of the next one.
#
# Usage: probe_cache_boots.sh SRCDIR BUILDDIR KERNEL        (on the host)
#   with HWAF_MODULE_DIR (default BUILDDIR/modules) and HWAF_INFO (default
#   BUILDDIR/hwaf-info) as the other tests have them
#
# Boots the guest (tools/guest/run --kernel KERNEL) twice, with a fresh
# directory under BUILDDIR/test/tmp shared read-write across both boots:
#   boot 1  hwaf-info --calibrate --if-stale -o FILE, as hwaf-calibrate.service
#           runs it (no file yet: it calibrates; --point-seconds 0.002), then
#           two loads through an openssl.cnf naming FILE;
#   boot 2  the first load of the boot, hwaf-info --calibrate --if-stale
#           (which must find FILE current and leave it as it is), then more
#           loads (openssl dgst, openssl enc, hwaf-info).
# Every load must say "afalg: status: usable, ... (probe result cached)" in
# hwaf's debug log (HWAF_DEBUG) and log no "full probe", and compute the
# right bytes.  The guest phases run this script again:
#   probe_cache_boots.sh --guest calibrate|loads DIR MODULE_DIR HWAF_INFO
# Exit 0 pass, 1 fail.
set -u

fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok   - $*"; }
bad() { fails=$((fails + 1)); echo "FAIL - $*"; }

# SHA2-256 of nothing, and AES-128-CBC of 16 zero bytes under a zero key
# and IV (FIPS-197's AES-128 of zeros, then the PKCS#7 block).
SHA256_EMPTY=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
CBC_ZERO=66e94bd4ef8a2c3b884cfa59ca342b2e

# One load, number n, by the command after it: the debug log into
# DIR/load.n.log, the output into DIR/load.n.out.  Its verdict: the
# probe result cached, and the output holds want.
load() {
    local n=$1 want=$2
    shift 2
    HWAF_DEBUG=1 "$@" >"$dir/load.$n.out" 2>"$dir/load.$n.log"
    local rc=$?
    if [ $rc -ne 0 ]; then
        bad "load $n ($1): exit $rc: $(head -c 400 "$dir/load.$n.log")"
    elif ! grep -q "$want" "$dir/load.$n.out"; then
        bad "load $n ($1): output without $want: $(head -c 300 "$dir/load.$n.out")"
    elif grep -q 'full probe' "$dir/load.$n.log" ||
        ! grep -q 'afalg: status: usable, .* (probe result cached)' "$dir/load.$n.log"; then
        bad "load $n ($1): probed in full: $(grep -h -e 'probe cache: afalg' -e 'afalg: status: ' "$dir/load.$n.log" | sed 's/^.*(): //' | tr '\n' ' ' | head -c 600)"
    else
        ok "load $n ($1): probe result cached"
    fi
}

loads() {
    local first=$1 last=$2 n
    for ((n = first; n <= last; n++)); do
        case $(((n - first) % 3)) in
        0) load "$n" "$SHA256_EMPTY" openssl dgst -sha256 </dev/null ;;
        1) load "$n" "$CBC_ZERO" sh -c 'head -c 16 /dev/zero |
               openssl enc -aes-128-cbc -K 00000000000000000000000000000000 \
                   -iv 00000000000000000000000000000000 | od -An -tx1 -v | tr -d " \n"' ;;
        2) load "$n" '(probe result cached)' "$info" ;;
        esac
    done
}

if [ "${1:-}" = --guest ]; then
    phase=${2:?phase} dir=${3:?directory} modules=${4:?module directory} info=${5:?hwaf-info}
    export OPENSSL_CONF=$dir/openssl.cnf OPENSSL_MODULES=$modules
    cal=$dir/calibration
    if [ "$(cat /proc/sys/kernel/random/boot_id)" = "$(cat "$dir/boot_id" 2>/dev/null)" ]; then
        bad "the same boot as before (boot_id $(cat "$dir/boot_id"))"
    fi
    cat /proc/sys/kernel/random/boot_id >"$dir/boot_id"
    case $phase in
    calibrate)
        cat >"$OPENSSL_CONF" <<CNF
openssl_conf = openssl_init

[openssl_init]
providers = provider_sect

[provider_sect]
hwaf = hwaf_sect
default = default_sect

[default_sect]
activate = 1

[hwaf_sect]
module = $modules/hwaf.so
calibration = $cal
offload_min = 0
activate = 1
CNF
        # What hwaf-calibrate.service runs, with the file not written yet.
        if "$info" --calibrate --if-stale -o "$cal" --point-seconds 0.002 \
            >"$dir/calibrate.out" 2>&1 && grep -q '^probe afalg [0-9a-f]\{16\}$' "$cal"; then
            ok "boot 1: hwaf-info --calibrate --if-stale wrote $cal with the probe's result"
        else
            bad "boot 1: hwaf-info --calibrate: $(tail -c 400 "$dir/calibrate.out")"
        fi
        loads 1 2
        ;;
    loads)
        loads 3 3
        sum=$(md5sum <"$cal")
        if "$info" --calibrate --if-stale -o "$cal" --point-seconds 0.002 \
            >"$dir/if-stale.out" 2>&1 && grep -q 'not rewritten' "$dir/if-stale.out" &&
            [ "$(md5sum <"$cal")" = "$sum" ]; then
            ok "boot 2: hwaf-info --calibrate --if-stale finds the file current"
        else
            bad "boot 2: hwaf-info --calibrate --if-stale: $(head -c 400 "$dir/if-stale.out")"
        fi
        loads 4 9
        ;;
    *)
        bad "unknown phase $phase"
        ;;
    esac
    echo "$phase: $passes passed, $fails failed"
    [ $fails -eq 0 ]
    exit
fi

src=${1:?source directory} build=${2:?build directory} kernel=${3:?kernel line}
src=$(cd "$src" && pwd) build=$(cd "$build" && pwd)
modules=${HWAF_MODULE_DIR:-$build/modules} info=${HWAF_INFO:-$build/hwaf-info}
mkdir -p "$build/test/tmp" || exit 1
dir=$(mktemp -d "$build/test/tmp/probe-cache-boots.XXXXXX") || exit 1
for phase in calibrate loads; do
    echo "# boot: $phase (kernel $kernel)"
    "$src/tools/guest/run" --kernel "$kernel" --rw "$src" --rw "$build" -- \
        bash "$src/test/probe_cache_boots.sh" --guest "$phase" "$dir" "$modules" "$info"
    rc=$?
    if [ $rc -ne 0 ]; then
        bad "boot $phase: exit $rc"
        break
    fi
    ok "boot $phase"
done
if [ $fails -eq 0 ]; then
    rm -rf "$dir"
else
    echo "# kept: $dir"
fi
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]

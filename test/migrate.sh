#!/bin/sh
# migrate.sh: docs/migrate.md applied to engine-era openssl.cnf files.
#
# For each engine configuration of docs/migrate.md (afalg, devcrypto), the
# change the page documents is made mechanically: the `engines` line and the
# sections it names go, the page's hwaf block is added.  Then, with that
# file alone (OPENSSL_CONF; no HWAF_* variable but HWAF_STATS, which only
# records):
#   - `openssl speed -elapsed` of AES-128-CBC and SHA-256 runs and hwaf
#     serves it (its counters show the operations: in software, as the
#     size-aware dispatch decides on the kernel's CPU drivers);
#   - with the page's engine-like line (offload_min = 0) the same runs
#     through the kernel (kernel cipher and digest operations);
#   - OpenVPN's --test-crypto (AES-256-CBC with HMAC-SHA256) passes through
#     the kernel the same way;
#   - the engine-era file itself hands hwaf nothing (hwaf is not loaded).
# The devcrypto configuration runs with backends = devcrypto, under
# test/cuse/with-devcrypto (HWAF_DEVCRYPTO set) or not at all when there is
# no /dev/crypto: then it fails.
#
# Environment: HWAF_MODULE_DIR (hwaf.so), OPENSSL (default: openssl).
set -u
here=$(cd "$(dirname "$0")" && pwd)
doc=$here/../docs/migrate.md
moddir=${HWAF_MODULE_DIR:?HWAF_MODULE_DIR names the directory of hwaf.so}
openssl=${OPENSSL:-openssl}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/migrate.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok   - $*"; }
bad() { fails=$((fails + 1)); echo "FAIL - $*"; }

# block NAME: the code block that follows <!-- migrate:NAME --> in the page.
block() {
    awk -v m="<!-- migrate:$1 -->" '$0 == m { on = 1; next }
        on && /^```/ { if (inb) exit; inb = 1; next }
        on && inb { print }' "$doc"
}
# migrate FILE: the documented change, made to FILE (stdout): the
# `engines = X` line and the sections X names go (X itself, and each
# section a line of X names); the [openssl_init] lines of the hwaf block go
# into FILE's [openssl_init], its other sections at the end.
migrate() {
    awk -v blk="$tmp/hwaf.block" '
        function sec(l) { gsub(/[][ \t]/, "", l); return l }
        # pass 1: the sections to drop
        FNR == NR {
            if ($0 ~ /^\[/) cur = sec($0)
            else if ($0 ~ /^engines *=/) { v = $0; sub(/^[^=]*= */, "", v); drop[v] = 1 }
            else if (cur in drop && $0 ~ /=/) { v = $0; sub(/^[^=]*= */, "", v); drop[v] = 1 }
            next
        }
        # pass 2: the file without them
        /^\[/ { cur = sec($0); skip = cur in drop; if (skip) next }
        skip || /^engines *=/ { next }
        { print }
        cur == "openssl_init" && /^\[/ {
            while ((getline l < blk) > 0) {
                if (l ~ /^\[/) b = sec(l)
                else if (b == "openssl_init" && l ~ /=/) print l
            }
            close(blk)
        }
        END {
            b = ""
            while ((getline l < blk) > 0) {
                if (l ~ /^\[/) b = sec(l)
                if (b != "openssl_init") print l
            }
        }' "$1" "$1"
}
# counters FILE...: the sum of hwaf's records (HWAF_STATS) as "key=value ...".
counters() {
    cat "$@" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "pid" && kv[1] != "prog") s[kv[1]] += kv[2] } }
        END { for (k in s) printf "%s=%d ", k, s[k]; print "" }'
}
get() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

block hwaf >"$tmp/hwaf.block"
block engine-like >"$tmp/engine-like.block"
[ -s "$tmp/hwaf.block" ] && [ -s "$tmp/engine-like.block" ] ||
    { echo "FAIL - no hwaf or engine-like block in $doc"; exit 1; }
export OPENSSL_MODULES=$moddir

for engine in afalg devcrypto; do
    echo "# the $engine engine's openssl.cnf"
    block "engine-$engine" >"$tmp/$engine.engine.cnf"
    [ -s "$tmp/$engine.engine.cnf" ] || { bad "no engine-$engine block in $doc"; continue; }
    if [ $engine = devcrypto ] && [ ! -c /dev/crypto ]; then
        bad "no /dev/crypto for the devcrypto configuration (run under test/cuse/with-devcrypto)"
        continue
    fi
    migrate "$tmp/$engine.engine.cnf" >"$tmp/$engine.cnf"
    if grep -q 'engine' "$tmp/$engine.cnf" || ! grep -q '^providers = provider_sect' "$tmp/$engine.cnf"; then
        bad "$engine: the migrated file still names an engine or has no providers line"
        sed 's/^/    /' "$tmp/$engine.cnf"
        continue
    fi
    # The backend of the engine it replaces.
    printf 'backends = %s\n' "$engine" >>"$tmp/$engine.cnf"
    { cat "$tmp/$engine.cnf"; cat "$tmp/engine-like.block"; } >"$tmp/$engine.forced.cnf"

    # Before: the engine-era file loads no hwaf.
    mkdir -p "$tmp/st.$engine.before"
    OPENSSL_CONF=$tmp/$engine.engine.cnf HWAF_STATS=$tmp/st.$engine.before \
        "$openssl" speed -elapsed -seconds 1 -bytes 16384 -evp aes-128-cbc >"$tmp/before.log" 2>&1
    if [ -z "$(ls "$tmp/st.$engine.before")" ]; then
        ok "$engine: the engine-era file hands hwaf nothing ($("$openssl" version | cut -d' ' -f1-2))"
    else
        bad "$engine: hwaf worked under the engine-era file"
    fi

    for mode in auto forced; do
        cnf=$tmp/$engine.cnf
        [ $mode = auto ] || cnf=$tmp/$engine.forced.cnf
        st=$tmp/st.$engine.$mode
        mkdir -p "$st"
        for alg in aes-128-cbc sha256; do
            if OPENSSL_CONF=$cnf HWAF_STATS=$st "$openssl" speed -elapsed -seconds 1 -bytes 16384 \
                -evp $alg >"$tmp/speed.$alg.log" 2>&1 && grep -q '^Doing\|^version\|The .numbers' "$tmp/speed.$alg.log"; then
                :
            else
                bad "$engine $mode: openssl speed -elapsed -evp $alg failed"
                sed 's/^/    /' "$tmp/speed.$alg.log" | tail -n 8
            fi
        done
        c=$(counters "$st"/hwaf-stats.*)
        kc=$(get "$c" cipher_ops) kd=$(get "$c" digest_ops) sw=$(get "$c" software_ops)
        kc=${kc:-0} kd=${kd:-0} sw=${sw:-0}
        if [ $mode = auto ]; then
            if [ $((kc + kd + sw)) -gt 0 ]; then
                ok "$engine auto: openssl speed -elapsed served by hwaf (kernel cipher $kc, digest $kd, software $sw operations)"
            else
                bad "$engine auto: hwaf served nothing of openssl speed ($c)"
            fi
        else
            if [ "$kc" -gt 0 ] && [ "$kd" -gt 0 ]; then
                ok "$engine forced: openssl speed -elapsed through the kernel (cipher $kc, digest $kd operations; software $sw)"
            else
                bad "$engine forced: openssl speed not through the kernel ($c)"
            fi
        fi
    done

    # OpenVPN's loopback test of its data channel crypto, with the
    # engine-like file: the kernel carries cipher and HMAC.
    if command -v openvpn >/dev/null 2>&1; then
        key=$tmp/static.key
        [ -f "$key" ] || openvpn --genkey secret "$key" >/dev/null 2>&1 ||
            openvpn --genkey --secret "$key" >/dev/null 2>&1
        dep=
        openvpn --help 2>/dev/null | grep -q allow-deprecated-insecure-static-crypto &&
            dep=--allow-deprecated-insecure-static-crypto
        st=$tmp/st.$engine.openvpn
        mkdir -p "$st"
        if OPENSSL_CONF=$tmp/$engine.forced.cnf HWAF_STATS=$st openvpn --test-crypto --secret "$key" \
            --cipher AES-256-CBC --auth SHA256 $dep >"$tmp/ovpn.log" 2>&1; then
            c=$(counters "$st"/hwaf-stats.*)
            kc=$(get "$c" cipher_ops) km=$(get "$c" mac_ops)
            if [ "${kc:-0}" -gt 0 ] && [ "${km:-0}" -gt 0 ]; then
                ok "$engine: openvpn --test-crypto through the kernel (cipher $kc, MAC $km operations)"
            else
                bad "$engine: openvpn --test-crypto not through the kernel ($c)"
            fi
        else
            bad "$engine: openvpn --test-crypto failed"
            tail -n 8 "$tmp/ovpn.log" | sed 's/^/    /'
        fi
    else
        bad "openvpn not installed"
    fi
done
echo "# $passes passed, $fails failed"
[ $fails -eq 0 ]

#!/bin/sh
# enc-dgst.sh: `openssl enc` and `openssl dgst` on a 256 MiB file (64 MiB in
# the shipped mode), hwaf installed system-wide (lib.sh), byte-identical to
# the default provider.  (HWAF_APPS_MIB overrides the size.)
. "$(dirname "$0")/lib.sh"
need openssl cmp
OPENSSL=${OPENSSL:-openssl}
mib=${HWAF_APPS_MIB:-256}
[ -n "${HWAF_APPS_MIB:-}" ] || [ "$apps_mode" = forced ] || mib=64
size=$((mib * 1024 * 1024))
ver=$($OPENSSL version | awk '{ print $2 }')
random_file "$tmp/data" "$size" || { bad "cannot make $mib MiB of data"; finish; }

enc() { # CIPHER KEY IV LABEL CNF OUT [-d]
    with "$5" "$4" $OPENSSL enc "-$1" -K "$2" -iv "$3" ${7:-} -in "$tmp/${8:-data}" -out "$6"
}
K32=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
K16=2b7e151628aed2a6abf7158809cf4f3c
IV=f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff

for c in "aes-256-cbc $K32" "aes-128-ctr $K16"; do
    set -- $c
    section "openssl enc -$1"
    enc "$1" "$2" "$IV" "$1.hwaf" hwaf "$tmp/out.hwaf" || bad "$1: hwaf enc failed"
    enc "$1" "$2" "$IV" "$1.default" default "$tmp/out.default" || bad "$1: default enc failed"
    same "$1: $mib MiB encrypted through hwaf = default" "$tmp/out.hwaf" "$tmp/out.default"
    carried "$1 enc" "$1.hwaf" "$size" openssl
    untouched "$1 enc" "$1.default"
    row "openssl enc -$1 -e, $mib MiB" "$ver" "" "$1.hwaf" "$1.default" "$size" ">= 1"
    rm -f "$tmp/out.default"
    if [ "$1" = aes-256-cbc ]; then # (CTR decrypts as it encrypts)
        enc "$1" "$2" "$IV" "$1.dec" hwaf "$tmp/back" -d out.hwaf || bad "$1: hwaf dec failed"
        same "$1: decrypted through hwaf = original" "$tmp/back" "$tmp/data"
        carried "$1 dec" "$1.dec" "$size" openssl
    fi
    rm -f "$tmp/back" "$tmp/out.hwaf"
done

for d in sha256 sha512; do
    section "openssl dgst -$d"
    with hwaf "$d.hwaf" $OPENSSL dgst "-$d" -r "$tmp/data" >"$tmp/md.hwaf" || bad "$d: hwaf dgst failed"
    with default "$d.default" $OPENSSL dgst "-$d" -r "$tmp/data" >"$tmp/md.default" || bad "$d: default dgst failed"
    same "$d: digest of $mib MiB through hwaf = default" "$tmp/md.hwaf" "$tmp/md.default"
    carried "$d dgst" "$d.hwaf" "$size" openssl
    untouched "$d dgst" "$d.default"
    row "openssl dgst -$d, $mib MiB" "$ver" "" "$d.hwaf" "$d.default" "$size" ">= 1"
done
finish

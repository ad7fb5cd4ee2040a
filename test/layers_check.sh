#!/bin/sh
# layers_check.sh: the provider reads top-down; no file uses one above it.
#
# Usage: layers_check.sh LIBHWAF_CORE_A
#
# The layers, top to bottom (docs/design.md); a file may use symbols of its
# own layer and of the layers below:
#   1 entry         hwaf_entry.c hwaf_prov.c
#   2 mode layers   hwaf_cipher.c hwaf_digest.c hwaf_tls.c hwaf_aead.c hwaf_mac.c
#   3 between the mode layers and the backends: the shared implementation
#                   helpers hwaf_impl.c; what the digest and MAC layers
#                   share, hwaf_hash.c; the software path of size-aware
#                   dispatch, hwaf_soft.c hwaf_soft_aead_mac.c
#   4 backends      be_*.c
#   5 system calls  *_sys.c
#   6 plumbing      hwaf_algs.c hwaf_classify.c hwaf_config.c hwaf_err.c
#                   hwaf_debug.c hwaf_stats.c hwaf_fork.c hwaf_sandbox.c
#                   hwaf_calib.c hwaf_probe_cache.c
# A source file in none of them fails the check: put it in its layer here.
# Exit 0 pass, 1 fail.
set -u
lib=${1:?path of libhwaf_core.a}

ENTRY="hwaf_entry hwaf_prov"
MODES="hwaf_cipher hwaf_digest hwaf_tls hwaf_aead hwaf_mac"
IMPL="hwaf_impl hwaf_hash hwaf_soft hwaf_soft_aead_mac"
PLUMBING="hwaf_algs hwaf_classify hwaf_config hwaf_err hwaf_debug hwaf_stats hwaf_fork hwaf_sandbox hwaf_calib hwaf_probe_cache"

layer_of() { # object file name -> layer number (0: unknown)
    f=${1%.o}
    f=${f%.c}
    for n in $ENTRY; do [ "$f" = "$n" ] && { echo 1; return; }; done
    for n in $MODES; do [ "$f" = "$n" ] && { echo 2; return; }; done
    for n in $IMPL; do [ "$f" = "$n" ] && { echo 3; return; }; done
    case $f in be_*) echo 4; return ;; *_sys) echo 5; return ;; esac
    for n in $PLUMBING; do [ "$f" = "$n" ] && { echo 6; return; }; done
    echo 0
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# member symbol, for defined and for undefined global symbols
nm -A --defined-only -g "$lib" 2>/dev/null | sed -n 's/^[^:]*:\([^:]*\): *[0-9a-f]* [A-Za-z] \(.*\)$/\2 \1/p' |
    LC_ALL=C sort -k1,1 >"$tmp/defs"
nm -A -u "$lib" 2>/dev/null | sed -n 's/^[^:]*:\([^:]*\): *U \(.*\)$/\2 \1/p' | LC_ALL=C sort -k1,1 >"$tmp/uses"
[ -s "$tmp/defs" ] || { echo "FAIL - no symbols read from $lib"; exit 1; }

fails=0
for m in $(cut -d' ' -f2 "$tmp/defs" "$tmp/uses" | LC_ALL=C sort -u); do
    echo "$m $(layer_of "$m")"
done >"$tmp/layers"
while read -r m l; do
    [ "$l" = 0 ] || continue
    echo "FAIL - ${m%.o}: in no layer; add it to its layer in test/layers_check.sh and docs/design.md"
    fails=$((fails + 1))
done <"$tmp/layers"
LC_ALL=C join "$tmp/uses" "$tmp/defs" | awk -v lf="$tmp/layers" '
    BEGIN { while ((getline l < lf) > 0) { split(l, f, " "); layer[f[1]] = f[2] } }
    $2 != $3 && layer[$2] > 0 && layer[$3] > 0 && layer[$3] < layer[$2] {
        n = $2; sub(/\.o$/, "", n); d = $3; sub(/\.o$/, "", d)
        printf "FAIL - %s (layer %d) uses %s of %s (layer %d), a file above it\n", n, layer[$2], $1, d, layer[$3]
    }' >"$tmp/up"
if [ -s "$tmp/up" ]; then
    cat "$tmp/up"
    fails=$((fails + $(wc -l <"$tmp/up")))
fi
edges=$(LC_ALL=C join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 { print $2, $3 }' | LC_ALL=C sort -u | wc -l)
if [ $fails -eq 0 ]; then
    echo "ok   - $(cut -d' ' -f2 "$tmp/defs" | LC_ALL=C sort -u | wc -l) files, $edges uses between them, none upward"
fi
[ $fails -eq 0 ]

#!/bin/sh
# doc_check.sh: the manual pages are well formed, and they and docs/config.md
# name exactly what the provider has.
#
# Usage: doc_check.sh SOURCE_DIR MAN_DIR
#   SOURCE_DIR  the source tree; MAN_DIR  the generated pages (build/docs/man)
#
# Checks
#   - every generated page passes `mandoc -T lint -W warning` and lexgrog
#     (man-db) finds its NAME line in the gzipped page that is installed;
#   - the configuration keys of provider/hwaf_config.c (its names table) are
#     exactly the keys of docs/config.md's key table and of hwaf(7)'s
#     CONFIGURATION section: a key added to the code and not documented, or
#     documented and gone from the code, fails;
#   - every property (HWAF_PROP_*) and parameter or counter (HWAF_PARAM_*)
#     of include/hwaf/hwaf.h is described in both documents;
#   - docs/apps.md's application table is well formed, covers 6.1 and
#     6.12, and every figure in it meets the test printed beside it.
# Exit 0 pass, 1 fail.
set -u
src=${1:?source directory}
man=${2:?directory of the generated manual pages}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/doccheck.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok   - $*"; }
bad() { fails=$((fails + 1)); echo "FAIL - $*"; }

command -v mandoc >/dev/null || { echo "FAIL - mandoc not found (Debian package mandoc; tools/deps --test)"; exit 1; }
command -v lexgrog >/dev/null || { echo "FAIL - lexgrog not found (Debian package man-db; tools/deps --test)"; exit 1; }

pages="hwaf.7 hwaf-info.1 hwaf-bench.1"
for p in $pages; do
    f=$man/$p
    if [ ! -s "$f" ] || [ ! -s "$f.gz" ]; then
        bad "$p: not generated ($f)"
        continue
    fi
    if mandoc -T lint -W warning "$f" >"$tmp/lint" 2>&1; then
        ok "$p: mandoc -T lint -W warning is clean"
    else
        bad "$p: mandoc -T lint"
        sed 's/^/      /' "$tmp/lint" | head -20
    fi
    name=${p%.*}
    if lexgrog "$f.gz" >"$tmp/lex" 2>&1 && grep -q "\"$name - " "$tmp/lex"; then
        ok "$p: lexgrog reads its NAME line ($(sed 's/^[^"]*"//; s/"$//' "$tmp/lex"))"
    else
        bad "$p: lexgrog cannot read a NAME line"
        sed 's/^/      /' "$tmp/lex"
    fi
done

# ---- configuration keys -------------------------------------------------------
cfg=$src/provider/hwaf_config.c
pod=$src/docs/man/hwaf.7.pod
md=$src/docs/config.md
# The code: every enum constant CFG_X (but CFG_COUNT) has an entry
# [CFG_X] = "name" in the names table.
sed -n 's/^[[:space:]]*\[\(CFG_[A-Z0-9_]*\)\][[:space:]]*=[[:space:]]*"\([a-z0-9_]*\)".*/\1 \2/p' "$cfg" \
    | LC_ALL=C sort -u >"$tmp/code.pairs"
cut -d' ' -f2 "$tmp/code.pairs" | LC_ALL=C sort -u >"$tmp/code"
sed -n '/^enum *{[^}]*CFG_/,/}/p' "$cfg" | grep -o 'CFG_[A-Z0-9_]*' | grep -v '^CFG_COUNT$' \
    | LC_ALL=C sort -u >"$tmp/enum"
if [ ! -s "$tmp/code" ] || [ ! -s "$tmp/enum" ]; then
    bad "no configuration keys found in $cfg (its names table changed shape: update this check)"
elif ! cut -d' ' -f1 "$tmp/code.pairs" | LC_ALL=C sort -u | cmp -s - "$tmp/enum"; then
    bad "$cfg: the CFG_ enum and the names table differ: $(cut -d' ' -f1 "$tmp/code.pairs" | LC_ALL=C sort -u | comm -3 - "$tmp/enum" | tr -d '\t' | tr '\n' ' ')"
else
    ok "$(wc -l <"$tmp/code") configuration keys in the code: $(tr '\n' ' ' <"$tmp/code")"
fi
# docs/config.md: the first column of the table under "## Keys".
sed -n '/^## Keys/,/^## /p' "$md" | sed -n 's/^| *`\([a-z0-9_]*\)` *|.*/\1/p' | LC_ALL=C sort -u >"$tmp/md"
# hwaf(7): =item B<key> in the CONFIGURATION section.
sed -n '/^=head1 CONFIGURATION/,/^=head1 /p' "$pod" | sed -n 's/^=item B<\([a-z0-9_]*\)>.*/\1/p' \
    | LC_ALL=C sort -u >"$tmp/pod"
for doc in md pod; do
    case $doc in md) what="docs/config.md" ;; pod) what="hwaf(7)" ;; esac
    missing=$(comm -23 "$tmp/code" "$tmp/$doc" | tr '\n' ' ')
    extra=$(comm -13 "$tmp/code" "$tmp/$doc" | tr '\n' ' ')
    if [ -z "$missing$extra" ] && [ -s "$tmp/$doc" ]; then
        ok "$what documents exactly the code's configuration keys"
    else
        [ -z "$missing" ] || bad "$what does not document the key(s): $missing"
        [ -z "$extra" ] || bad "$what documents key(s) the code does not have: $extra"
        [ -s "$tmp/$doc" ] || bad "$what: no key table found"
    fi
done

# ---- properties, parameters, counters ------------------------------------------
sed -n 's/^#define HWAF_\(PROP\|PARAM\)_[A-Z0-9_]* *"\([^"]*\)".*/\2/p' "$src/include/hwaf/hwaf.h" \
    | LC_ALL=C sort -u >"$tmp/names"
if [ ! -s "$tmp/names" ]; then
    bad "no HWAF_PROP_/HWAF_PARAM_ names found in include/hwaf/hwaf.h"
fi
while read -r n; do
    grep -qF "\`$n\`" "$md" || bad "docs/config.md does not describe \"$n\""
    grep -qE "(\"$n\"|B<$n>)" "$pod" || bad "hwaf(7) does not describe \"$n\""
done <"$tmp/names"
ok "$(wc -l <"$tmp/names") property and parameter names of include/hwaf/hwaf.h looked up in both documents"

# ---- docs/apps.md: the application table ------------------------------------
# Written by the application tests (tools/apps-table; apps.table compares it
# with a run): here only that it is well formed, has its four lines, and
# that every figure meets the test printed beside it.
if "$src/tools/apps-table" --check-doc --doc "$src/docs/apps.md" 6.1 6.12 6.12/openssl-3.5 6.12/openssl-4.0 >"$tmp/apps" 2>&1; then
    ok "$(sed -n 's/^ok   - //p' "$tmp/apps")"
else
    bad "docs/apps.md's application table (tools/apps-table --check-doc)"
    sed 's/^/      /' "$tmp/apps" | head -20
fi

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]

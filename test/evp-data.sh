#!/bin/bash
# evp-data.sh: OpenSSL's own evp_test and its data files, through hwaf.
#
# Usage: test/evp-data.sh build OUT [ROOT]
#          (on the host) take the source of the OpenSSL whose libssl-dev is
#          installed -- on the host, or in ROOT, a root of
#          tools/guest/make-root -- from its Debian source package (that
#          version, else the newest the registry serves of the same X.Y;
#          apt-get source with a deb-src list of its own, cached with the
#          guest's kernels); build its evp_test against that libcrypto
#          (OUT/evp_test); keep the data files' stanzas for hwaf's
#          algorithms (test/evp_data_filter.awk: OUT/data/FILE) and list
#          every other stanza with the reason it is left out (OUT/left-out)
#        test/evp-data.sh run OUT BACKEND
#          (in the guest) evp_test over each OUT/data file with an
#          openssl.cnf that activates hwaf (backends = BACKEND, afalg or
#          devcrypto; offload_min = 0: every operation to the kernel) and
#          default, and sets default_properties = ?provider=hwaf
#
# run fails on a failed stanza; on a stanza evp_test skips; on a file
# whose kinds of work (cipher, AEAD, digest, MAC) hwaf's counters
# (HWAF_STATS) do not show in the kernel; on an algorithm of the data hwaf
# does not offer here; and when the stanzas of hwaf's algorithms left out
# are not exactly those named in test/evp-data.left-out (OpenSSL's
# FIPS-provider-only vectors), whose count is checked.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)

usage() { sed -n '2,26s/^# \{0,1\}//p' "$0"; exit 2; }
[ $# -ge 2 ] || usage
what=$1 out=$2
shift 2

fail() { echo "FAIL - evp-data: $*" >&2; exit 1; }

# The data files with stanzas of hwaf's algorithms.
files=(evpciph_aes_common.txt evpciph_aes_cts.txt evpmd_sha.txt evpmac_common.txt)

build() {
    local root=${1:-} in=() ver line cache lists srcdir have v
    [ -z "$root" ] || in=(chroot "$root")
    ver=$("${in[@]}" dpkg-query -W -f '${Version}\n' libssl-dev | head -n 1)
    [ -n "$ver" ] || fail "no libssl-dev${root:+ in $root}"
    line=$(echo "$ver" | sed -E 's/^([0-9]+\.[0-9]+)\..*/\1/')
    # shellcheck source=../tools/guest/common.sh
    . "$src/tools/guest/common.sh"
    cache=$(guest_cache_dir)/sources
    lists=$cache/apt-lists
    mkdir -p "$lists/partial" "$cache"
    cat >"$cache/sources.list" <<EOF
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian trixie main
deb-src http://deb.debian.org/debian sid main
deb-src http://deb.debian.org/debian experimental main
EOF
    local apt=(-o "Dir::Etc::sourcelist=$cache/sources.list" -o Dir::Etc::sourceparts=-
        -o "Dir::State::Lists=$lists" -o APT::Get::List-Cleanup=0)
    exec 9>"$cache/.lock"
    flock 9
    # The installed version's source, else the newest of the line the
    # registry serves (it serves each suite's own version, not every update):
    # one cached already, else the first that downloads.
    candidates() {
        echo "$ver"
        apt-cache "${apt[@]}" showsrc openssl 2>/dev/null | sed -n 's/^Version: //p' | grep "^$line\." | sort -Vr
    }
    upstream() { local u=${1%-*}; echo "${u#*:}"; }
    have=
    for v in $(candidates); do
        [ -f "$cache/openssl-$(upstream "$v")/.complete" ] && { have=$(upstream "$v"); break; }
    done
    if [ -z "$have" ]; then
        apt-get "${apt[@]}" update >/dev/null 2>&1 || fail "apt-get update (deb-src) failed"
        for v in $(candidates); do
            local up
            up=$(upstream "$v")
            (cd "$cache" && apt-get "${apt[@]}" source --download-only "openssl=$v") >/dev/null 2>&1 || true
            [ -f "$cache/openssl_$up.orig.tar.gz" ] || continue
            rm -rf "$cache/openssl-$up"
            tar -C "$cache" -xzf "$cache/openssl_$up.orig.tar.gz"
            rm -f "$cache/openssl_$up"*
            : >"$cache/openssl-$up/.complete"
            have=$up
            break
        done
    fi
    flock -u 9
    [ -n "$have" ] || fail "no source package of OpenSSL $line in the registry"
    srcdir=$cache/openssl-$have
    echo "evp-data: evp_test and data of OpenSSL $have (Debian source package), libssl-dev $ver${root:+ in $root}"
    rm -rf "$out"
    mkdir -p "$out/data" "$out/obj"
    out=$(cd "$out" && pwd)
    # libtestutil.a's sources, as test/build.info lists them.
    local tu
    tu=$(awk '/SOURCE\[libtestutil.a\]=/ { on = 1; sub(/.*=/, "") }
              on { l = $0; c = sub(/\\$/, "", l); printf "%s ", l; if (!c) exit }' "$srcdir/test/build.info" |
        sed 's/\$LIBAPPSSRC/..\/apps\/lib\/opt.c/; s/\$AUXLIBAPPSSRC//')
    [ -n "$tu" ] || fail "no libtestutil.a sources in $srcdir/test/build.info"
    local script='set -e
        cd "$SRCDIR/test"
        objs=
        for f in $TU; do
            o=$OUT/obj/$(echo "$f" | tr / _ | sed "s/\.c$/.o/")
            cc -O1 -w -idirafter ../include -I../apps/include -I.. -c "$f" -o "$o"
            objs="$objs $o"
        done
        ar rcs "$OUT/libtestutil.a" $objs
        cc -O1 -w -idirafter ../include -I../apps/include -I.. evp_test.c "$OUT/libtestutil.a" -lcrypto \
            -o "$OUT/evp_test"'
    if [ -z "$root" ]; then
        SRCDIR=$srcdir OUT=$out TU=$tu sh -c "$script"
    else
        "$src/tools/guest/in-root" "$root" --bind "$srcdir:/media" --bind "$out:/mnt" \
            --env SRCDIR=/media --env OUT=/mnt --env "TU=$tu" -- sh -c "$script"
    fi
    rm -rf "$out/obj" "$out/libtestutil.a"
    : >"$out/left-out"
    local f
    for f in "${files[@]}"; do
        [ -f "$srcdir/test/recipes/30-test_evp_data/$f" ] || fail "no $f in OpenSSL $have's test data"
        (cd "$srcdir/test/recipes/30-test_evp_data" &&
            awk -v left="$out/left-out.tmp" -v counts="$out/data/$f.count" \
                -f "$here/evp_data_filter.awk" "$f" >"$out/data/$f")
        cat "$out/left-out.tmp" >>"$out/left-out"
        rm -f "$out/left-out.tmp"
    done
    echo "$have" >"$out/version"
    echo "evp-data: $(cat "$out"/data/*.count | awk '{ s += $1 } END { print s }') stanzas of hwaf's algorithms in ${#files[@]} files," \
        "$(wc -l <"$out/left-out") others left out ($out/left-out)"
}

run() {
    local backend=$1 ver tmp cnf rc=0 f kinds
    [ -x "$out/evp_test" ] || fail "no $out/evp_test (test/evp-data.sh build)"
    ver=$(cat "$out/version")
    : "${HWAF_MODULE_DIR:?HWAF_MODULE_DIR names the directory of hwaf.so}"
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/evp-data.XXXXXX")
    cnf=$tmp/openssl.cnf
    cat >"$cnf" <<EOF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
alg_section = alg_sect
[alg_sect]
default_properties = ?provider=hwaf
[provider_sect]
hwaf = hwaf_sect
default = default_sect
[default_sect]
activate = 1
[hwaf_sect]
module = $HWAF_MODULE_DIR/hwaf.so
activate = 1
backends = $backend
offload_min = 0
EOF
    # The stanzas of hwaf's algorithms left out: exactly those expected.
    local want got
    want=$(awk -v v="${ver%.*}" '!/^#/ && $1 == v { $1 = ""; sub(/^ /, ""); print }' "$here/evp-data.left-out" |
        sort)
    got=$(grep -F '[hwaf algorithm]' "$out/left-out" | sed -E 's/^([^:]+):[0-9]+ ([^:]+): .*/\1 \2/' |
        sort) || true
    if [ "$got" != "$want" ]; then
        echo "evp-data: stanzas of hwaf's algorithms left out, expected (test/evp-data.left-out):" >&2
        echo "${want:-  none}" >&2
        echo "  left out:" >&2
        echo "${got:-  none}" >&2
        rc=1
    fi
    echo "evp-data: $(printf '%s\n' "$got" | grep -c . || true) stanzas of hwaf's algorithms left out, as expected:"
    grep -F '[hwaf algorithm]' "$out/left-out" | sed 's/^/  /' || true
    # Every algorithm of the kept stanzas is hwaf's here.
    local list
    list=$(OPENSSL_CONF=$cnf "${OPENSSL:-openssl}" list -cipher-algorithms -digest-algorithms -mac-algorithms \
        -propquery provider=hwaf 2>/dev/null) || true
    for f in "${files[@]}"; do
        local n st log
        n=$(cat "$out/data/$f.count")
        mkdir -p "$tmp/stats-$f"
        log=$tmp/$f.log
        st=0
        HWAF_STATS=$tmp/stats-$f OPENSSL_CONF=/dev/null "$out/evp_test" -config "$cnf" "$out/data/$f" >"$log" 2>&1 ||
            st=$?
        local skips
        skips=$(grep -c 'skipping' "$log" || true)
        # The kernel's share of each kind of work: hwaf's counters of evp_test.
        kinds=$(cat "$tmp/stats-$f"/hwaf-stats.* 2>/dev/null |
            awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2] } }
                 END { printf "cipher %d aead %d digest %d mac %d software %d",
                       s["cipher_ops"], s["aead_ops"], s["digest_ops"], s["mac_ops"], s["software_ops"] }')
        local need=
        case $f in
        evpciph_aes_common.txt) need="cipher aead" ;;
        evpciph_aes_cts.txt) need="cipher" ;;
        evpmd_sha.txt) need="digest" ;;
        evpmac_common.txt) need="mac" ;;
        esac
        local k bad=
        for k in $need; do
            echo "$kinds" | grep -Eq "(^| )$k [1-9]" || bad="$bad $k"
        done
        if [ $st -ne 0 ] || [ "$skips" != 0 ] || [ -n "$bad" ]; then
            echo "evp-data: $f over $backend: FAILED (exit $st, $skips stanzas skipped${bad:+, no kernel work for:$bad}; kernel ops: $kinds)" >&2
            grep -E 'not ok|skipping|error|Source of above' "$log" | head -n 40 >&2 || true
            rc=1
        else
            echo "evp-data: $f over $backend: $n stanzas passed, 0 skipped (kernel ops: $kinds)"
        fi
    done
    for a in AES-128-CBC AES-256-XTS AES-128-GCM SHA2-256 HMAC; do
        echo "$list" | grep -qi "$a.*@ hwaf" ||
            { echo "evp-data: $a is not hwaf's here: the data would have run on the default provider" >&2; rc=1; }
    done
    rm -rf "$tmp"
    [ $rc = 0 ] && echo "evp-data: OpenSSL $ver's data over $backend: passed" ||
        echo "evp-data: OpenSSL $ver's data over $backend: FAILED" >&2
    return $rc
}

case $what in
build) build "$@" ;;
run)
    [ $# -eq 1 ] || usage
    case $1 in afalg | devcrypto) ;; *) usage ;; esac
    run "$1"
    ;;
*) usage ;;
esac

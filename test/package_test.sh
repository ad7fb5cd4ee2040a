#!/bin/sh
# package_test.sh: the Debian packages, built and installed as a system
# administrator would.
#
# Usage: package_test.sh build BUILD_DIR PKG_DIR
#          Build the packages with CPack (BUILD_DIR's configuration, prefix
#          /usr) into PKG_DIR and check them: files where Debian's own
#          providers and programs go, Depends computed by dpkg-shlibdeps.
#        package_test.sh install PKG_DIR NO_AFALG
#          As root, in the test guest: install hwaf into a fresh root (an
#          overlay of this machine's /, from which any installed hwaf is
#          removed first) and there check that
#            - installed as on a kernel without AF_ALG and /dev/crypto
#              (NO_AFALG: test/no_afalg.c, a seccomp filter), dpkg -i
#              succeeds and writes no calibration file;
#            - installed on this kernel, the postinst writes
#              /var/cache/hwaf/calibration (mode 0644, the probe's
#              result), enables hwaf-calibrate.service, and a load through
#              the shipped hwaf.cnf takes the probe result from it;
#            - the unit's command leaves a current file alone and rewrites
#              a stale one atomically while programs keep loading it;
#            - a set-user-ID program ignores HWAF_DEBUG, HWAF_STATS and
#              HWAF_OFFLOAD_MIN;
#            - `openssl list -providers -provider hwaf` finds the module
#              with no OPENSSL_MODULES, and enc/dgst run through it;
#            - hwaf-info passes and the manual pages are in place;
#            - the drop-in configuration (docs/packaging.md: one .include
#              line in Debian's /etc/ssl/openssl.cnf, or a directory include
#              named by OPENSSL_CONF) makes programs that never heard of
#              hwaf use it: openssl, openvpn --test-crypto, curl against
#              openssl s_server (TLS 1.2, AES-CBC), each proven by the
#              debug log's count of work handed to the kernel;
#            - purging the package leaves nothing behind (the calibration
#              file and the unit's enablement included).
# Exit 0 pass, 1 fail.
set -u
mode=${1:-}
fails=0
passes=0
t0=$(date +%s)
ok() { passes=$((passes + 1)); echo "ok   - $* [$(($(date +%s) - t0)) s]"; }
bad() { fails=$((fails + 1)); echo "FAIL - $*"; }
die() { echo "FAIL - $*"; exit 1; }
finish() { echo "$passes passed, $fails failed"; [ $fails -eq 0 ]; }

modulesdir=$(pkg-config --variable=modulesdir libcrypto) || die "pkg-config libcrypto"

if [ "$mode" = build ]; then
    build=${2:?build directory}
    out=${3:?package directory}
    rm -rf "$out"
    mkdir -p "$out"
    cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 ||
        { cat "$out/cpack.log"; die "cpack -G DEB"; }
    rm -rf "$out/_CPack_Packages"
    deb=$(ls "$out"/hwaf_*.deb 2>/dev/null)
    bdeb=$(ls "$out"/hwaf-bench_*.deb 2>/dev/null)
    [ -f "$deb" ] || die "no hwaf_*.deb in $out"
    [ -f "$bdeb" ] || die "no hwaf-bench_*.deb in $out"
    dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$out/hwaf.files"
    for f in "$modulesdir/hwaf.so" /usr/bin/hwaf-info /usr/share/man/man7/hwaf.7.gz \
        /usr/share/man/man1/hwaf-info.1.gz /usr/share/doc/hwaf/examples/hwaf.cnf \
        /usr/share/doc/hwaf/config.md /usr/share/doc/hwaf/README.md \
        /lib/systemd/system/hwaf-calibrate.service /var/cache/hwaf/; do
        if grep -qx "$f" "$out/hwaf.files"; then ok "hwaf ships $f"; else bad "hwaf lacks $f"; fi
    done
    dpkg-deb -c "$bdeb" | awk '{print $6}' | sed 's|^\./|/|' >"$out/bench.files"
    for f in /usr/bin/hwaf-bench /usr/share/man/man1/hwaf-bench.1.gz; do
        if grep -qx "$f" "$out/bench.files"; then ok "hwaf-bench ships $f"; else bad "hwaf-bench lacks $f"; fi
    done
    if grep -v '/$' "$out/hwaf.files" | grep -v -e "^$modulesdir/" -e '^/usr/bin/' -e '^/usr/share/' \
        -e '^/lib/systemd/system/hwaf-calibrate\.service$' >"$out/stray"; then
        bad "hwaf ships files outside the module directory, /usr/bin, /usr/share and its unit: $(tr '\n' ' ' <"$out/stray")"
    else
        ok "hwaf ships nothing outside the module directory, /usr/bin, /usr/share and its unit"
    fi
    # The calibration file's place: an empty directory, mode 0755, and the
    # maintainer scripts that fill and clean it.
    if dpkg-deb -c "$deb" | grep -q '^drwxr-xr-x root/root .* \./var/cache/hwaf/$'; then
        ok "hwaf owns /var/cache/hwaf (0755, root)"
    else
        bad "no /var/cache/hwaf/ with mode 0755 in the package"
    fi
    x=$(mktemp -d "$out/c.XXXXXX")
    dpkg-deb -e "$deb" "$x"
    if [ -x "$x/postinst" ] && [ -x "$x/postrm" ] && grep -q 'hwaf-info --calibrate --if-stale' "$x/postinst"; then
        ok "hwaf has a postinst that calibrates and a postrm"
    else
        bad "hwaf's maintainer scripts: $(ls "$x")"
    fi
    rm -rf "$x"
    # Depends: what dpkg-shlibdeps says of the binaries, run here on the
    # packaged files themselves, must be the packages' Depends.
    for p in hwaf hwaf-bench; do
        d=$(dpkg-deb -f "$out/${p}_"*.deb Depends)
        x=$(mktemp -d "$out/x.XXXXXX")
        dpkg-deb -x "$out/${p}_"*.deb "$x"
        mkdir -p "$x/debian" && : >"$x/debian/control"
        bins=$(cd "$x" && find usr -type f \( -name '*.so' -o -path 'usr/bin/*' \) | sort)
        want=$(cd "$x" && dpkg-shlibdeps -O $bins 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
        rm -rf "$x"
        if [ -n "$d" ] && [ "$d" = "$want" ]; then
            ok "$p Depends: $d (as dpkg-shlibdeps computes it)"
        else
            bad "$p Depends is '$d', dpkg-shlibdeps says '$want'"
        fi
    done
    case $(dpkg-deb -f "$deb" Depends) in
    *"libssl3 (>= 3."*) ok "hwaf depends on libssl3 with a lower bound" ;;
    *) bad "hwaf does not depend on a libssl3 version" ;;
    esac
    finish
    exit
fi

[ "$mode" = install ] || die "usage: package_test.sh build BUILD_DIR PKG_DIR | install PKG_DIR"
pkgs=${2:?package directory}
noafalg=${3:-}
deb=$(ls "$pkgs"/hwaf_*.deb 2>/dev/null)
[ -f "$deb" ] || die "no hwaf_*.deb in $pkgs (the test host.package builds it)"
[ "$(id -u)" = 0 ] || die "the install test needs root (it runs in the test guest)"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
grep -qw overlay /proc/filesystems || die "no overlayfs in this kernel"

# ---- a fresh root: this system, writable in memory, without hwaf ----------------
base=$(mktemp -d /tmp/pkgroot.XXXXXX)
root=$base/root
mounts=
cleanup() {
    for m in $mounts; do umount -l "$m" 2>/dev/null; done
    rm -rf "$base" 2>/dev/null
}
trap cleanup EXIT
mount -t tmpfs -o size=512m pkgroot "$base" || die "mount tmpfs"
mkdir -p "$base/upper" "$base/work" "$root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$base/upper,workdir=$base/work" "$root" ||
    die "mount overlay of / at $root"
mounts="$root $mounts"
for d in proc sys dev dev/pts; do
    mount --bind "/$d" "$root/$d" || die "bind /$d"
    mounts="$root/$d $mounts"
done
mount -t tmpfs -o mode=1777 roottmp "$root/tmp" || die "tmpfs at $root/tmp"
mounts="$root/tmp $mounts"
in_root() { chroot "$root" env -u OPENSSL_MODULES -u OPENSSL_CONF -u HWAF_DEBUG "$@"; }

if in_root dpkg-query -W -f='${Status}' hwaf 2>/dev/null | grep -q installed; then
    echo "note: hwaf is installed on this system; purged in the test root first"
    in_root dpkg --purge hwaf-bench hwaf >/dev/null 2>&1
fi
rm -f "$root$modulesdir/hwaf.so"
# man-db re-indexes every manual page after each dpkg run unless this flag
# file is absent (its documented switch); minutes under emulation, and not
# what this test is about.
rm -f "$root/var/lib/man-db/auto-update"
before=$base/before.list
(cd "$base/upper" && find . | LC_ALL=C sort) >"$before"
if in_root openssl list -providers -provider hwaf >/dev/null 2>&1; then
    bad "the fresh root already loads a hwaf provider"
else
    ok "the fresh root has no hwaf provider"
fi

# ---- install as on a kernel without AF_ALG and /dev/crypto ---------------------
cp "$deb" "$root/tmp/"
cal=/var/cache/hwaf/calibration
if [ -z "$noafalg" ] || [ ! -x "$noafalg" ]; then
    bad "no hwaf-no-afalg helper given (third argument)"
elif [ -e /dev/crypto ]; then
    bad "this guest has /dev/crypto: cannot install as without a kernel backend"
elif "$noafalg" chroot "$root" env -u OPENSSL_MODULES -u OPENSSL_CONF -u HWAF_DEBUG \
        dpkg -i "/tmp/$(basename "$deb")" >"$base/dpkg.log" 2>&1; then
    if grep -q 'no kernel backend is usable here' "$base/dpkg.log" && [ -d "$root/var/cache/hwaf" ] &&
        [ -z "$(ls -A "$root/var/cache/hwaf")" ]; then
        ok "without AF_ALG and /dev/crypto: dpkg -i succeeds, nothing calibrated, /var/cache/hwaf empty"
    else
        bad "without AF_ALG: $(ls -A "$root/var/cache/hwaf" 2>&1 | tr '\n' ' ')"
        sed 's/^/      /' "$base/dpkg.log"
    fi
else
    sed 's/^/      /' "$base/dpkg.log"
    bad "dpkg -i without AF_ALG and /dev/crypto failed"
fi

# ---- install -------------------------------------------------------------------
if in_root dpkg -i "/tmp/$(basename "$deb")" >"$base/dpkg.log" 2>&1; then
    ok "dpkg -i $(basename "$deb") (its Depends satisfied by this system)"
else
    sed 's/^/      /' "$base/dpkg.log"
    bad "dpkg -i"
    finish
    exit
fi
in_root dpkg -L hwaf >"$base/files"
# The postinst's calibration, on this kernel.
if [ -f "$root$cal" ] && [ "$(stat -c %a "$root$cal")" = 644 ] &&
    head -n 1 "$root$cal" | grep -qx 'hwaf-calibration 1' && grep -q '^probe afalg [0-9a-f]\{16\}$' "$root$cal" &&
    grep -q 'implementations calibrated' "$base/dpkg.log"; then
    ok "the postinst wrote $cal (0644, probe afalg $(sed -n 's/^probe afalg //p' "$root$cal"), $(grep -c '^[A-Z]' "$root$cal") thresholds)"
else
    bad "the postinst's calibration: $(ls -l "$root$cal" 2>&1)"
    sed 's/^/      /' "$base/dpkg.log"
fi
[ -L "$root/etc/systemd/system/multi-user.target.wants/hwaf-calibrate.service" ] &&
    ok "hwaf-calibrate.service is enabled (multi-user.target.wants)" || bad "hwaf-calibrate.service is not enabled"
unitcmd=$(sed -n 's/^ExecStart=//p' "$root/lib/systemd/system/hwaf-calibrate.service")
[ -f "$root$modulesdir/hwaf.so" ] && ok "hwaf.so in $modulesdir" || bad "no $modulesdir/hwaf.so"

in_root openssl list -providers -provider hwaf >"$base/list" 2>&1
if grep -q '^  hwaf$' "$base/list" && grep -q 'status: active' "$base/list"; then
    ok "openssl list -providers -provider hwaf finds the module (no OPENSSL_MODULES)"
else
    bad "openssl list -providers -provider hwaf: $(tr '\n' ' ' <"$base/list")"
fi
in_root hwaf-info >"$base/info" 2>&1 && ok "hwaf-info: $(tail -n 1 "$base/info")" ||
    { bad "hwaf-info"; sed 's/^/      /' "$base/info"; }
in_root man -w hwaf >/dev/null 2>&1 && in_root man -w 1 hwaf-info >/dev/null 2>&1 &&
    ok "man finds hwaf(7) and hwaf-info(1)" || bad "man -w hwaf / hwaf-info"

# handed LOG [MIN]: the debug log's unload line counts work handed to the
# kernel (at least MIN bytes: the program's data, not only the probe's
# known answers).
handed() {
    sed -n 's/.*unload: afalg \([0-9]*\) ops \([0-9]*\) bytes, devcrypto \([0-9]*\) ops \([0-9]*\) bytes.*/\1 \2 \3 \4/p' "$1" |
        awk -v min="${2:-1}" '{ o += $1 + $3; b += $2 + $4 } END { if (o > 0 && b >= min) { print o " operations, " b " bytes"; exit 0 } exit 1 }'
}
head -c 100000 /dev/urandom >"$root/tmp/plain"
K=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
IV=0f0e0d0c0b0a09080706050403020100
in_root openssl enc -aes-256-cbc -K $K -iv $IV -in /tmp/plain -out /tmp/ct.default 2>/dev/null
in_root openssl dgst -sha256 -r /tmp/plain >"$base/dgst.default" 2>/dev/null
cp "$base/dgst.default" "$root/tmp/dgst.default"
rm -f "$root/tmp/h.log"
# HWAF_OFFLOAD_MIN=0: the 100000 bytes go to the kernel (by default a CPU
# driver's work stays in software; the kernel then sees only the probe's
# known answers).
if in_root env HWAF_DEBUG=file:/tmp/h.log HWAF_OFFLOAD_MIN=0 openssl enc -aes-256-cbc -provider hwaf -provider default \
        -propquery provider=hwaf -K $K -iv $IV -in /tmp/plain -out /tmp/ct.hwaf &&
    cmp -s "$root/tmp/ct.default" "$root/tmp/ct.hwaf" && w=$(handed "$root/tmp/h.log" 100000); then
    ok "enc -aes-256-cbc -provider hwaf matches the default provider ($w to the kernel)"
else
    bad "enc -aes-256-cbc through the installed hwaf"
fi
rm -f "$root/tmp/h.log"
if in_root env HWAF_DEBUG=file:/tmp/h.log HWAF_OFFLOAD_MIN=0 openssl dgst -sha256 -r -provider hwaf -provider default \
        -propquery provider=hwaf /tmp/plain >"$base/dgst.hwaf" &&
    cmp -s "$base/dgst.default" "$base/dgst.hwaf" && w=$(handed "$root/tmp/h.log" 100000); then
    ok "dgst -sha256 -provider hwaf matches the default provider ($w to the kernel)"
else
    bad "dgst -sha256 through the installed hwaf"
fi

# ---- a set-user-ID program ignores HWAF_* ------------------------------------------
# Two copies of openssl owned by nobody, one set-user-ID; both run by root
# with the same environment.  Only the set-user-ID one runs with AT_SECURE
# (real uid 0, effective uid 65534): it must write no log and no record and
# keep the default thresholds; the other shows that the variables work.
cp "$root/usr/bin/openssl" "$root/tmp/openssl.plain"
cp "$root/usr/bin/openssl" "$root/tmp/openssl.suid"
chown 65534:65534 "$root/tmp/openssl.plain" "$root/tmp/openssl.suid"
chmod 0755 "$root/tmp/openssl.plain"
chmod 4755 "$root/tmp/openssl.suid"
for v in plain suid; do
    mkdir -m 1777 "$root/tmp/stats.$v"
    in_root env HWAF_DEBUG=file:/tmp/debug.$v.log HWAF_STATS=/tmp/stats.$v HWAF_OFFLOAD_MIN=0 \
        /tmp/openssl.$v dgst -sha256 -r -provider hwaf -provider default -propquery provider=hwaf \
        /tmp/plain >"$base/dgst.$v" 2>"$base/err.$v"
    in_root env HWAF_OFFLOAD_MIN=0 /tmp/openssl.$v list -providers -verbose -provider hwaf \
        >"$base/list.$v" 2>&1
done
if cmp -s "$base/dgst.default" "$base/dgst.plain" && w=$(handed "$root/tmp/debug.plain.log" 100000) &&
    [ -n "$(ls "$root/tmp/stats.plain")" ] && grep -q 'offload_min=0 source=configured' "$base/list.plain"; then
    ok "not set-user-ID: HWAF_DEBUG, HWAF_STATS and HWAF_OFFLOAD_MIN=0 apply ($w to the kernel)"
else
    bad "not set-user-ID: the variables did not apply: $(cat "$base/err.plain")"
fi
if cmp -s "$base/dgst.default" "$base/dgst.suid" && [ ! -e "$root/tmp/debug.suid.log" ] &&
    [ -z "$(ls "$root/tmp/stats.suid")" ] && grep -q 'source=default' "$base/list.suid" &&
    ! grep -q 'source=configured' "$base/list.suid"; then
    ok "set-user-ID: same digest, HWAF_DEBUG, HWAF_STATS and HWAF_OFFLOAD_MIN ignored"
else
    bad "set-user-ID: $(ls "$root/tmp/debug.suid.log" "$root/tmp/stats.suid" 2>&1 | tr '\n' ' ') $(cat "$base/err.suid")"
fi
rm -rf "$root"/tmp/openssl.plain "$root"/tmp/openssl.suid "$root"/tmp/stats.* "$root"/tmp/debug.*.log

# ---- the drop-in configuration ---------------------------------------------------
# Debian 12's recipe, exactly as docs/packaging.md gives it, on this root's
# own /etc/ssl/openssl.cnf.
in_root cp /usr/share/doc/hwaf/examples/hwaf.cnf /etc/ssl/hwaf.cnf
echo ".include /etc/ssl/hwaf.cnf" >>"$root/etc/ssl/openssl.cnf"
# A directory include, named through OPENSSL_CONF only.
mkdir -p "$root/tmp/cnf.d"
cp "$root/usr/share/doc/hwaf/examples/hwaf.cnf" "$root/tmp/cnf.d/"
{ grep -v '^\.include /etc/ssl/hwaf.cnf' "$root/etc/ssl/openssl.cnf"; echo ".include /tmp/cnf.d"; } >"$root/tmp/dir.cnf"

# app DESCRIPTION CONF CMD...: CMD (which names no provider) succeeds and,
# per the debug log, handed work to the kernel through hwaf.  The shipped
# hwaf.cnf names the calibration file, whose thresholds keep a CPU
# driver's work in software; HWAF_OFFLOAD_MIN=0 (hwaf.cnf sets no
# offload_min) sends every operation to the kernel, so that the count is
# the program's data, not only the probe's.
app() {
    _d=$1 _c=$2
    shift 2
    rm -f "$root/tmp/h.log"
    if chroot "$root" env -u OPENSSL_MODULES -u OPENSSL_CONF HWAF_DEBUG=file:/tmp/h.log HWAF_OFFLOAD_MIN=0 $_c "$@" \
        >"$base/app.out" 2>&1 && w=$(handed "$root/tmp/h.log"); then
        ok "$_d ($w to the kernel through hwaf)"
    else
        bad "$_d"
        tail -n 15 "$base/app.out" | sed 's/^/      /'
        grep -m3 'unload\|error' "$root/tmp/h.log" 2>/dev/null | sed 's/^/      /'
    fi
}
for conf in "" "OPENSSL_CONF=/tmp/dir.cnf"; do
    how=${conf:-"/etc/ssl/openssl.cnf + .include"}
    app "$how: openssl list shows hwaf active" "$conf" sh -c \
        'openssl list -providers | grep -A3 "^  hwaf" | grep -q active && openssl enc -aes-128-ctr -K 000102030405060708090a0b0c0d0e0f -iv 00000000000000000000000000000000 -in /tmp/plain -out /dev/null'
    app "$how: openssl enc -aes-256-cbc, same bytes as the default provider" "$conf" sh -c \
        "openssl enc -aes-256-cbc -K $K -iv $IV -in /tmp/plain -out /tmp/ct.cnf && cmp /tmp/ct.cnf /tmp/ct.default"
    app "$how: openssl dgst -sha256, same digest as the default provider" "$conf" sh -c \
        "openssl dgst -sha256 -r /tmp/plain | cmp - /tmp/dgst.default"
done
if in_root which openvpn >/dev/null 2>&1; then
    in_root openvpn --genkey secret /tmp/static.key >/dev/null 2>&1
    app "openvpn --test-crypto (AES-256-CBC, SHA256) through OPENSSL_CONF" "OPENSSL_CONF=/tmp/dir.cnf" \
        openvpn --test-crypto --secret /tmp/static.key --cipher AES-256-CBC --auth SHA256 --verb 1
else
    bad "openvpn not installed (Debian package openvpn; tools/deps --test)"
fi
if in_root which curl >/dev/null 2>&1; then
    in_root ip link set lo up 2>/dev/null
    in_root openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
        -keyout /tmp/key.pem -out /tmp/cert.pem -days 2 >/dev/null 2>&1
    echo "hello through hwaf" >"$root/tmp/index.html"
    chroot "$root" env -u OPENSSL_MODULES -u HWAF_DEBUG OPENSSL_CONF=/tmp/dir.cnf sh -c \
        'cd /tmp && exec openssl s_server -quiet -accept 127.0.0.1:4433 -cert cert.pem -key key.pem -tls1_2 -cipher ECDHE-ECDSA-AES128-SHA256 -WWW' \
        >"$base/server.log" 2>&1 &
    spid=$!
    sleep 2
    app "curl https:// (TLS 1.2, ECDHE-ECDSA-AES128-SHA256) through OPENSSL_CONF" "OPENSSL_CONF=/tmp/dir.cnf" \
        sh -c 'curl -sS --cacert /tmp/cert.pem --tls-max 1.2 --ciphers ECDHE-ECDSA-AES128-SHA256 https://localhost:4433/index.html | grep -q "hello through hwaf"'
    kill $spid 2>/dev/null
    wait $spid 2>/dev/null
else
    bad "curl not installed (Debian package curl; tools/deps --test)"
fi
# ---- the calibration file through the shipped hwaf.cnf -----------------------------
# A load through /etc/ssl/openssl.cnf + hwaf.cnf (which names the file)
# takes the probe's result from it.
in_root hwaf-info >"$base/info" 2>&1
if grep -q 'afalg: *usable.*(probe result cached)' "$base/info"; then
    ok "hwaf-info through the shipped hwaf.cnf: $(sed -n 's/^ *afalg: *//p' "$base/info")"
else
    bad "hwaf-info through the shipped hwaf.cnf: $(grep -m1 'afalg:' "$base/info")"
fi
# The unit's command: a current file is left alone.
before_id=$(stat -c %i.%Y "$root$cal")
if in_root sh -c "$unitcmd" >"$base/unit.out" 2>&1 && grep -q 'not rewritten' "$base/unit.out" &&
    [ "$(stat -c %i.%Y "$root$cal")" = "$before_id" ]; then
    ok "hwaf-calibrate.service's command on a current file: $(head -n 1 "$base/unit.out")"
else
    bad "the unit's command on a current file"
    sed 's/^/      /' "$base/unit.out"
fi
# A stale one (another probe key) is written again: under umask 077 the
# new file is still 0644, and programs loading it all the while never
# see a half-written file.
key=$(sed -n 's/^probe afalg //p' "$root$cal")
sed -i 's/^probe afalg .*/probe afalg 0123456789abcdef/' "$root$cal"
in_root sh -c "umask 077; exec $unitcmd" >"$base/unit.out" 2>&1 &
upid=$!
# (OpenSSL 3.0 carries on without a provider its configuration could not
# load: a load counts as failed when anything is said on stderr, as hwaf
# does when it refuses a calibration file.)
loads=0 lfail=0
: >"$base/loads.err"
while kill -0 $upid 2>/dev/null; do
    if in_root openssl dgst -sha256 -r /tmp/plain 2>"$base/load.err" | cmp -s - "$base/dgst.default" &&
        [ ! -s "$base/load.err" ]; then
        loads=$((loads + 1))
    else
        lfail=$((lfail + 1))
        cat "$base/load.err" >>"$base/loads.err"
    fi
done
wait $upid
urc=$?
if [ $urc = 0 ] && grep -q 'calibrating' "$base/unit.out" && [ "$(stat -c %a "$root$cal")" = 644 ] &&
    [ "$(sed -n 's/^probe afalg //p' "$root$cal")" = "$key" ] && [ $lfail = 0 ] && [ $loads -gt 0 ] &&
    [ -z "$(ls "$root/var/cache/hwaf" | grep -v '^calibration$')" ]; then
    ok "the unit's command on a stale file: written again (0644 under umask 077, key $key), $loads loads meanwhile, none failed"
else
    bad "the unit's command on a stale file: exit $urc, mode $(stat -c %a "$root$cal"), key $(sed -n 's/^probe afalg //p' "$root$cal") (want $key), $lfail of $((loads + lfail)) loads failed"
    sed 's/^/      /' "$base/unit.out"
    head -n 5 "$base/loads.err" 2>/dev/null | sed 's/^/      /'
fi

# Leave /etc/ssl/openssl.cnf as it was and remove the snippet, as an
# administrator would before removing the package.
grep -v '^\.include /etc/ssl/hwaf.cnf' "$root/etc/ssl/openssl.cnf" >"$base/o.cnf"
cat "$base/o.cnf" >"$root/etc/ssl/openssl.cnf"
rm -f "$root/etc/ssl/hwaf.cnf"

# ---- purge: nothing left behind ----------------------------------------------------
if in_root dpkg --purge hwaf >"$base/dpkg.log" 2>&1; then ok "dpkg --purge hwaf"; else bad "dpkg --purge hwaf"; fi
left=
while read -r f; do
    [ -d "$f" ] && continue
    { [ -e "$root$f" ] || [ -L "$root$f" ]; } && left="$left $f"
done <"$base/files"
[ -z "$left" ] && ok "every file the package installed is gone" || bad "left behind:$left"
in_root openssl list -providers -provider hwaf >/dev/null 2>&1 && bad "hwaf still loads after purge" ||
    ok "hwaf no longer loads"
# Whatever changed in the root besides dpkg's own records, the log and the
# files this test wrote must not be there.
(cd "$base/upper" && find . | LC_ALL=C sort) | LC_ALL=C comm -13 "$before" - |
    grep -v -e '^\./var/lib/dpkg\(/\|$\)' -e '^\./var/log\(/dpkg\.log\)\?$' -e '^\./var$' \
        -e '^\./etc/ssl\(/openssl\.cnf\)\?$' -e '^\./etc$' -e '^\./tmp$' >"$base/changed"
# directories that exist in the host's / were only copied up
while read -r f; do
    [ -d "$base/upper/$f" ] && [ -d "/$f" ] || echo "$f"
done <"$base/changed" >"$base/left"
if [ -s "$base/left" ]; then
    bad "the package left behind: $(tr '\n' ' ' <"$base/left")"
else
    ok "nothing else in the root changed (besides dpkg's records and log)"
fi
cmp -s "$root/etc/ssl/openssl.cnf" /etc/ssl/openssl.cnf && ok "/etc/ssl/openssl.cnf restored" ||
    bad "/etc/ssl/openssl.cnf differs from the system's"
finish

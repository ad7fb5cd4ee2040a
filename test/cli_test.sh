#!/bin/sh
# cli_test.sh: the openssl command line with hwaf.
#
# Usage: cli_test.sh host|kernel
#   host    no kernel backend: hwaf loads, `list` shows it offering nothing,
#           an openssl.cnf with a bad value refuses to load it with an error
#           naming the key
#   kernel  enc/dgst/list with -provider hwaf and through an openssl.cnf
#           providers section, compared with the default provider; hwaf.hw=yes
#           behaviour for the guest configuration (HWAF_GUEST_VIRTIO_CRYPTO)
#
# Environment: OPENSSL (openssl binary), HWAF_MODULE_DIR (where hwaf.so is),
# HWAF_TEST_TMPDIR (scratch).  Exit 0 pass, 1 fail, 77 skipped (never in CI
# or in the guest).
set -u

mode=${1:-}
OPENSSL=${OPENSSL:-openssl}
moddir=${HWAF_MODULE_DIR:?HWAF_MODULE_DIR must name the directory holding hwaf.so}
module=$moddir/hwaf.so
tmp=$(mktemp -d "${HWAF_TEST_TMPDIR:-${TMPDIR:-/tmp}}/cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok   - $*"; }
bad() { fails=$((fails + 1)); echo "FAIL - $*"; }
check() { # DESCRIPTION CMD...: the command must succeed
    _desc=$1
    shift
    if "$@" >"$tmp/out" 2>"$tmp/err"; then ok "$_desc"; else bad "$_desc"; sed 's/^/      /' "$tmp/err" | head -20; fi
}
refuse() { # DESCRIPTION CMD...: the command must fail with an error message
    _desc=$1
    shift
    if "$@" >"$tmp/out" 2>"$tmp/err"; then
        bad "$_desc (succeeded)"
    elif [ ! -s "$tmp/err" ]; then
        bad "$_desc (failed without a message)"
    else
        ok "$_desc"
    fi
}
same() { # DESCRIPTION FILE1 FILE2
    if cmp -s "$2" "$3"; then ok "$1"; else bad "$1 ($2 and $3 differ)"; fi
}
skip_or_fail() {
    case "${CI:-}${HWAF_GUEST:-}" in
    *true* | *1*) echo "FAIL - $*"; exit 1 ;;
    esac
    echo "SKIP - $*"
    exit 77
}

[ -f "$module" ] || { echo "FAIL - no module at $module"; exit 1; }
PROV="-provider-path $moddir -provider hwaf -provider default"

# An openssl.cnf with a providers section; $1: extra lines for [hwaf_sect].
write_cnf() {
    cat >"$tmp/openssl.cnf" <<CNF
openssl_conf = openssl_init

[openssl_init]
providers = provider_sect

[provider_sect]
hwaf = hwaf_sect
default = default_sect

[default_sect]
activate = 1

[hwaf_sect]
module = $module
$1
activate = 1
CNF
}

have_afalg() { "$(dirname "$0")/../tools/guest/have-afalg" >/dev/null 2>&1; }

# ---- host ----------------------------------------------------------------------
if [ "$mode" = host ]; then
    if have_afalg || [ -e /dev/crypto ]; then
        skip_or_fail "this host has a kernel backend; the kernel CLI test covers it"
    fi
    check "list -providers -verbose -provider hwaf" $OPENSSL list -providers -verbose $PROV
    grep -q "hwaf" "$tmp/out" && ok "hwaf listed as a provider" || bad "hwaf not in list -providers"
    grep -qi "status: active" "$tmp/out" && ok "hwaf active" || bad "hwaf not active"
    grep -q "config: backends = afalg devcrypto; prefer = auto;" "$tmp/out" &&
        ok "list -providers -verbose shows the configuration in effect" ||
        bad "list -providers -verbose lacks the configuration in effect"
    check "list -cipher-algorithms -provider hwaf" $OPENSSL list -cipher-algorithms -provider-path "$moddir" -provider hwaf
    if grep -q "@ hwaf" "$tmp/out"; then bad "hwaf offers ciphers without a kernel backend"; else ok "no hwaf ciphers"; fi
    check "list -digest-algorithms -provider hwaf" $OPENSSL list -digest-algorithms -provider-path "$moddir" -provider hwaf
    if grep -q "@ hwaf" "$tmp/out"; then bad "hwaf offers digests without a kernel backend"; else ok "no hwaf digests"; fi
    printf 'abc' >"$tmp/abc"
    refuse "dgst -sha256 -propquery provider=hwaf fails cleanly" \
        $OPENSSL dgst $PROV -propquery provider=hwaf -sha256 "$tmp/abc"
    write_cnf "allow_software = yes"
    OPENSSL_CONF=$tmp/openssl.cnf check "openssl.cnf with a good hwaf section" $OPENSSL list -providers
    grep -q hwaf "$tmp/out" && ok "hwaf loaded from openssl.cnf" || bad "hwaf not loaded from openssl.cnf"
    for kv in "allow_software = maybe" "backends = afalg quantum" "backends =" "prefer = fastest" "debug = loud"; do
        key=${kv%% *}
        write_cnf "$kv"
        OPENSSL_CONF=$tmp/openssl.cnf $OPENSSL list -providers >"$tmp/out" 2>"$tmp/err"
        if grep -q "hwaf" "$tmp/out"; then bad "'$kv' accepted"; else ok "'$kv' refused"; fi
        if grep -q "$key" "$tmp/err"; then ok "'$kv': the error names $key"; else
            bad "'$kv': no error naming $key (stderr: $(head -c 300 "$tmp/err"))"
        fi
    done
    echo "# $passes passed, $fails failed"
    [ $fails = 0 ]
    exit
fi

[ "$mode" = kernel ] || { echo "usage: $0 host|kernel" >&2; exit 2; }

# ---- kernel --------------------------------------------------------------------
if ! have_afalg && [ ! -e /dev/crypto ]; then
    skip_or_fail "no AF_ALG and no /dev/crypto here (run in the guest: ctest -L kernel)"
fi
virtio=${HWAF_GUEST_VIRTIO_CRYPTO:-0}

check "list -providers -verbose -provider hwaf" $OPENSSL list -providers -verbose $PROV
grep -q "hwaf" "$tmp/out" && ok "hwaf listed" || bad "hwaf not listed"
check "list -cipher-algorithms -provider hwaf" $OPENSSL list -cipher-algorithms -provider-path "$moddir" -provider hwaf
for a in AES-128-CBC AES-192-CBC AES-256-CBC AES-128-CTR AES-192-CTR AES-256-CTR AES-128-XTS AES-256-XTS; do
    grep -q "$a.*@ hwaf" "$tmp/out" && ok "list shows $a @ hwaf" || bad "list lacks $a @ hwaf"
done
check "list -digest-algorithms -provider hwaf" $OPENSSL list -digest-algorithms -provider-path "$moddir" -provider hwaf
for a in SHA1 SHA2-224 SHA2-256 SHA2-384 SHA2-512; do
    grep -q "$a.*@ hwaf" "$tmp/out" && ok "list shows $a @ hwaf" || bad "list lacks $a @ hwaf"
done

head -c 100003 /dev/urandom >"$tmp/plain"
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
IV=f0e0d0c0b0a090807060504030201000
for c in aes-128-cbc aes-192-cbc aes-256-cbc aes-128-ctr aes-256-ctr; do
    klen=$(echo "$c" | sed 's/aes-\([0-9]*\)-.*/\1/')
    k=$(echo $KEY | cut -c1-$((klen / 4)))
    check "enc -$c with hwaf" $OPENSSL enc $PROV -propquery provider=hwaf -$c -K "$k" -iv $IV -in "$tmp/plain" -out "$tmp/ct.hwaf"
    check "enc -$c with default" $OPENSSL enc -$c -K "$k" -iv $IV -in "$tmp/plain" -out "$tmp/ct.default"
    same "enc -$c: hwaf = default" "$tmp/ct.hwaf" "$tmp/ct.default"
    check "enc -d -$c with hwaf" $OPENSSL enc -d $PROV -propquery provider=hwaf -$c -K "$k" -iv $IV -in "$tmp/ct.default" -out "$tmp/back"
    same "enc -d -$c: round trip" "$tmp/back" "$tmp/plain"
done
# hwaf alone (no default provider loaded) proves hwaf did the work.
$OPENSSL enc -aes-256-cbc -K $KEY -iv $IV -in "$tmp/plain" -out "$tmp/ct.default"
check "enc -aes-256-cbc with only hwaf loaded" $OPENSSL enc -provider-path "$moddir" -provider hwaf -aes-256-cbc -K $KEY -iv $IV -in "$tmp/plain" -out "$tmp/ct.only"
same "enc with only hwaf = default" "$tmp/ct.only" "$tmp/ct.default"
refuse "enc -aes-128-ecb -propquery provider=hwaf (not offered) fails" \
    $OPENSSL enc $PROV -propquery provider=hwaf -aes-128-ecb -K 000102030405060708090a0b0c0d0e0f -in "$tmp/plain" -out "$tmp/x"
# XTS: OpenSSL 3.5's enc refuses XTS ciphers ("enc XTS ciphers not
# supported"; so does Debian 12's 3.0.22).  Where enc takes
# them, hwaf must equal default as above; where it refuses, it must refuse
# with hwaf loaded as without, and XTS is checked through the API below
# (hwaf-info: one 4 KiB data unit through hwaf against the default provider).
KEY2=202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f
for c in aes-128-xts aes-256-xts; do
    k=$KEY
    [ $c = aes-128-xts ] || k=$KEY$KEY2
    if $OPENSSL enc -$c -K "$k" -iv $IV -in "$tmp/plain" -out "$tmp/ct.default" 2>"$tmp/err.default"; then
        check "enc -$c with hwaf" $OPENSSL enc $PROV -propquery provider=hwaf -$c -K "$k" -iv $IV -in "$tmp/plain" -out "$tmp/ct.hwaf"
        same "enc -$c: hwaf = default" "$tmp/ct.hwaf" "$tmp/ct.default"
    else
        refuse "enc -$c with hwaf: refused as without hwaf ($(head -n 1 "$tmp/err.default"))" \
            $OPENSSL enc $PROV -propquery provider=hwaf -$c -K "$k" -iv $IV -in "$tmp/plain" -out "$tmp/ct.hwaf"
        if [ "$(head -n 1 "$tmp/err")" = "$(head -n 1 "$tmp/err.default")" ]; then
            ok "enc -$c: the same refusal with hwaf as without"
        else
            bad "enc -$c: refused differently with hwaf: $(head -n 1 "$tmp/err")"
        fi
    fi
done
# XTS (and every other cipher and digest) through the API, forced to the
# kernel: hwaf-info's checks against the default provider.
if [ -n "${HWAF_INFO:-}" ]; then
    write_cnf ""
    OPENSSL_CONF=$tmp/openssl.cnf HWAF_OFFLOAD_MIN=0 check "hwaf-info: every check matches the default provider" "$HWAF_INFO"
    for a in AES-128-XTS AES-256-XTS; do
        grep -Eq "^  $a +[^ ]+ +matches default provider" "$tmp/out" &&
            ok "API: $a through hwaf = default (hwaf-info)" || bad "API: no matching $a line from hwaf-info"
    done
    b=$(sed -n 's/^work handed to .*: [0-9]* operations, \([0-9]*\) bytes$/\1/p' "$tmp/out" | awk '{ s += $1 } END { print s + 0 }')
    [ "$b" -gt 0 ] && ok "hwaf-info: $b bytes handed to the kernel" || bad "hwaf-info: nothing handed to the kernel"
else
    bad "HWAF_INFO not set: XTS through the API unchecked"
fi
for d in sha1 sha224 sha256 sha384 sha512; do
    check "dgst -$d with hwaf" $OPENSSL dgst $PROV -propquery provider=hwaf -$d -r "$tmp/plain"
    cut -d' ' -f1 "$tmp/out" >"$tmp/md.hwaf"
    $OPENSSL dgst -$d -r "$tmp/plain" | cut -d' ' -f1 >"$tmp/md.default"
    same "dgst -$d: hwaf = default" "$tmp/md.hwaf" "$tmp/md.default"
done

# The same through an openssl.cnf providers section.
write_cnf ""
OPENSSL_CONF=$tmp/openssl.cnf check "openssl.cnf: list -providers" $OPENSSL list -providers
grep -q hwaf "$tmp/out" && ok "openssl.cnf: hwaf loaded" || bad "openssl.cnf: hwaf not loaded"
OPENSSL_CONF=$tmp/openssl.cnf check "openssl.cnf: enc -aes-256-cbc" \
    $OPENSSL enc -propquery provider=hwaf -aes-256-cbc -K $KEY -iv $IV -in "$tmp/plain" -out "$tmp/ct.cnf"
same "openssl.cnf: enc = default" "$tmp/ct.cnf" "$tmp/ct.default"
OPENSSL_CONF=$tmp/openssl.cnf check "openssl.cnf: dgst -sha256" $OPENSSL dgst -propquery provider=hwaf -sha256 -r "$tmp/plain"
cut -d' ' -f1 "$tmp/out" >"$tmp/md.cnf"
$OPENSSL dgst -sha256 -r "$tmp/plain" | cut -d' ' -f1 >"$tmp/md.default"
same "openssl.cnf: dgst = default" "$tmp/md.cnf" "$tmp/md.default"

# debug = yes logs to stderr.
write_cnf "debug = yes"
OPENSSL_CONF=$tmp/openssl.cnf $OPENSSL dgst -propquery provider=hwaf -sha256 "$tmp/plain" >"$tmp/out" 2>"$tmp/err"
[ -s "$tmp/err" ] && ok "debug = yes logs to stderr" || bad "debug = yes printed nothing"
write_cnf "debug = no"
OPENSSL_CONF=$tmp/openssl.cnf $OPENSSL dgst -propquery provider=hwaf -sha256 "$tmp/plain" >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] && ok "debug = no is quiet" || bad "debug = no printed: $(head -c 200 "$tmp/err")"

# hwaf.hw=yes.
HWYES="provider=hwaf,hwaf.hw=yes"
k128=$(echo $KEY | cut -c1-32)
if [ "$virtio" = 1 ]; then
    for c in aes-128-cbc aes-192-cbc aes-256-cbc; do
        klen=$(echo "$c" | sed 's/aes-\([0-9]*\)-.*/\1/')
        k=$(echo $KEY | cut -c1-$((klen / 4)))
        check "virtio: enc -$c -propquery $HWYES" $OPENSSL enc $PROV -propquery "$HWYES" -$c -K "$k" -iv $IV -in "$tmp/plain" -out "$tmp/ct.hw"
        $OPENSSL enc -$c -K "$k" -iv $IV -in "$tmp/plain" -out "$tmp/ct.default"
        same "virtio: enc -$c hw=yes = default" "$tmp/ct.hw" "$tmp/ct.default"
    done
    refuse "virtio: dgst -sha256 -propquery $HWYES fails (no hardware sha256)" \
        $OPENSSL dgst $PROV -propquery "$HWYES" -sha256 "$tmp/plain"
else
    refuse "enc -aes-128-cbc -propquery $HWYES fails (CPU drivers only)" \
        $OPENSSL enc $PROV -propquery "$HWYES" -aes-128-cbc -K $k128 -iv $IV -in "$tmp/plain" -out "$tmp/x"
    refuse "dgst -sha256 -propquery $HWYES fails (CPU drivers only)" \
        $OPENSSL dgst $PROV -propquery "$HWYES" -sha256 "$tmp/plain"
    # Declare every driver of these algorithms hardware (names from the kernel).
    drivers=$(awk '/^name/ { n = $3 } /^driver/ { d = $3 }
        /^$/ { if (n ~ /^(cbc\(aes\)|ctr\(aes\)|xts\(aes\)|sha1|sha224|sha256|sha384|sha512)$/) print d; n = "" }' /proc/crypto | sort -u | tr '\n' ' ')
    write_cnf "hw_drivers = $drivers"
    OPENSSL_CONF=$tmp/openssl.cnf check "hw_drivers = ($drivers): enc -aes-128-cbc -propquery $HWYES" \
        $OPENSSL enc -propquery "$HWYES" -aes-128-cbc -K $k128 -iv $IV -in "$tmp/plain" -out "$tmp/ct.hw"
    $OPENSSL enc -aes-128-cbc -K $k128 -iv $IV -in "$tmp/plain" -out "$tmp/ct.default"
    same "hw_drivers: enc hw=yes = default" "$tmp/ct.hw" "$tmp/ct.default"
    OPENSSL_CONF=$tmp/openssl.cnf check "hw_drivers: dgst -sha512 -propquery $HWYES" \
        $OPENSSL dgst -propquery "$HWYES" -sha512 "$tmp/plain"
fi

# Calibration: hwaf-info --calibrate measures the thresholds and writes the
# file the configuration names; loaded with it, every implementation that
# dispatch serves shows the written value of the policy in effect, as
# source=cached.  (Timing figures themselves are not asserted: TCG.)
if [ -n "${HWAF_INFO:-}" ]; then
    cal=$tmp/calibration
    for policy in throughput cpu; do
        write_cnf "calibration = $cal
offload_min = auto
policy = $policy"
        if [ "$policy" = throughput ]; then
            OPENSSL_CONF=$tmp/openssl.cnf check "hwaf-info --calibrate writes the configured file" \
                "$HWAF_INFO" --calibrate --point-seconds 0.002
            grep -v '^#' "$cal" | sed -n '2,$p' | grep -v -e '^zerocopy ' -e '^probe ' -e '^driver ' >"$tmp/cal.lines"
            grep '^zerocopy ' "$cal" >"$tmp/cal.zc"
            # zerocopy = auto's verdict, one line per AF_ALG cipher driver
            # (the drivers of AES-128-CBC/CTR and AES-256-XTS at least).
            nzc=0
            while read -r _ be drv v; do
                if [ "$be" = afalg ] && { [ "$v" = splice ] || [ "$v" = copy ]; } &&
                    grep -q "^AES-[0-9]*-[A-Z]* afalg $drv " "$tmp/cal.lines"; then
                    nzc=$((nzc + 1))
                else
                    bad "calibration file: zerocopy line for $drv: $be $v"
                fi
            done <"$tmp/cal.zc"
            if grep -q '^AES-128-CBC afalg ' "$tmp/cal.lines"; then
                [ "$nzc" -ge 3 ] && ok "calibration file: $nzc zerocopy verdicts" ||
                    bad "calibration file: $nzc zerocopy lines, expected one per AF_ALG cipher driver"
            fi
            head -n 1 "$cal" | grep -qx 'hwaf-calibration 1' && [ -s "$tmp/cal.lines" ] &&
                ok "calibration file: header and $(wc -l <"$tmp/cal.lines") lines" ||
                bad "calibration file malformed: $(head -c 300 "$cal")"
            col=4
        else
            col=5
        fi
        OPENSSL_CONF=$tmp/openssl.cnf check "policy = $policy: hwaf-info with the calibration" "$HWAF_INFO"
        cp "$tmp/out" "$tmp/info"
        n=0
        while read -r name be drv thr cpu; do
            want=$thr
            [ $col = 5 ] && want=$cpu
            if grep -qF "  $name $be $drv offload_min=$want source=cached" "$tmp/info"; then
                n=$((n + 1))
            else
                bad "policy = $policy: $name $be $drv: not offload_min=$want source=cached"
                grep -F " $name $be $drv offload_min=" "$tmp/info" | sed 's/^/      /'
            fi
        done <"$tmp/cal.lines"
        ok "policy = $policy: $n implementations use the calibrated threshold (source=cached)"
        grep -q "policy=$policy" "$tmp/info" && ok "policy = $policy shown" || bad "policy = $policy not shown"
    done
    # Every implementation dispatch serves got a line.
    for name in AES-128-CBC AES-128-CTR AES-256-XTS SHA2-256 AES-128-GCM HMAC; do
        grep -q "^$name " "$tmp/cal.lines" && ok "calibrated: $name" || bad "no calibration line for $name"
    done
    # The probe's result is in the file, and a load naming it takes it.
    grep -q '^probe afalg [0-9a-f]\{16\}$' "$cal" && grep -q '^driver afalg cbc(aes)/16 ' "$cal" &&
        ok "calibration file: the probe's result" || bad "calibration file: no probe result for afalg"
    write_cnf "calibration = $cal"
    OPENSSL_CONF=$tmp/openssl.cnf $OPENSSL list -providers -verbose >"$tmp/out" 2>&1
    grep -q 'afalg: usable, [0-9]* of [0-9]* algorithms offered (probe result cached)' "$tmp/out" &&
        ok "a load with the calibration file takes the probe's result" ||
        bad "a load with the calibration file probed again: $(grep -o 'afalg: [^;]*' "$tmp/out")"
    # A configuration that leaves dispatch nothing to serve (allow_software
    # = no and CPU drivers only; with an engine, its implementations are
    # timed): exit 0 all the same, the file holds the probe's result.
    write_cnf "calibration = $cal
allow_software = no"
    rm -f "$cal"
    OPENSSL_CONF=$tmp/openssl.cnf check "allow_software = no: hwaf-info --calibrate exits 0" \
        "$HWAF_INFO" --calibrate --point-seconds 0.002
    grep -q '^probe afalg [0-9a-f]\{16\}$' "$cal" &&
        ok "allow_software = no: the file holds the probe's result" ||
        bad "allow_software = no: no probe result in the file"
    if grep -v '^#' "$cal" | grep -q -v -e '^hwaf-calibration ' -e '^zerocopy ' -e '^probe ' -e '^driver '; then
        grep -q 'nothing to calibrate' "$tmp/out" &&
            bad "allow_software = no: 'nothing to calibrate' with implementations calibrated" ||
            ok "allow_software = no: hardware implementations calibrated"
    else
        grep -q 'nothing to calibrate: hwaf offers no implementation' "$tmp/out" &&
            ok "allow_software = no: 'nothing to calibrate' said" ||
            bad "allow_software = no: no implementation calibrated, and not said: $(head -c 300 "$tmp/out")"
    fi
    # A malformed file refuses the load, naming the file and line.
    printf 'hwaf-calibration 1\nAES-128-CBC afalg x 12kb never\n' >"$cal"
    write_cnf "calibration = $cal"
    OPENSSL_CONF=$tmp/openssl.cnf $OPENSSL list -providers >"$tmp/out" 2>"$tmp/err"
    grep -q "$cal:2" "$tmp/err" "$tmp/out" && ok "malformed calibration: error names $cal:2" ||
        bad "malformed calibration: no error naming $cal:2 ($(head -c 300 "$tmp/err"))"
fi

echo "# $passes passed, $fails failed"
[ $fails = 0 ]

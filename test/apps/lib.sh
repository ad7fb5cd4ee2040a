# lib.sh: shared by the application tests (sourced, POSIX sh).
#
# Two modes (HWAF_APPS_MODE), each installing hwaf system-wide as
# docs/install.md says: examples/hwaf.cnf copied to /etc/ssl/hwaf.cnf,
# `.include /etc/ssl/hwaf.cnf` at the end of /etc/ssl/openssl.cnf and
# hwaf.so in OpenSSL's modules directory (bind mounts in a private mount
# namespace: the guest's root is read-only), so that the applications read
# it without OPENSSL_CONF:
#   shipped  that file as it is: size-aware dispatch with the shipped
#            thresholds decides where the work goes (docs/config.md);
#   forced   the same with `offload_min = 0` added to [hwaf_sect] in the
#            file: every hwaf context offloads, proving that the kernel
#            path carries an application's data (the default).
# No hwaf environment variable changes what hwaf does: hwaf's share of the
# work is read from its per-process records (HWAF_STATS, docs/config.md,
# which change nothing else).  The reference runs use an openssl.cnf
# (OPENSSL_CONF) that activates default alone.
#
# Environment: HWAF_MODULE_DIR (hwaf.so), HWAF_TEST_TMPDIR (scratch; in the
# guest its /tmp, a tmpfs, is used for data), HWAF_APPS_RESULTS (directory
# that collects the table rows, optional), HWAF_GUEST_KERNEL (row label),
# HWAF_APPS_MODE (shipped or forced), HWAF_INFO (hwaf-info, for the
# thresholds the shipped mode expects).
# Needs root: the mount namespace, and a tmpfs on /run for sshd's and
# `ip netns`'s directories.
if [ -z "${HWAF_APPS_UNSHARED:-}" ]; then
    HWAF_APPS_UNSHARED=1 exec unshare -m sh -c 'mount -t tmpfs tmpfs /run && exec sh "$0"' "$0"
fi
apps_mode=${HWAF_APPS_MODE:-forced}
case $apps_mode in
shipped | forced) ;;
*) echo "FAIL - HWAF_APPS_MODE must be shipped or forced, not '$apps_mode'"; exit 1 ;;
esac

moddir=${HWAF_MODULE_DIR:?HWAF_MODULE_DIR must name the directory holding hwaf.so}
[ -f "$moddir/hwaf.so" ] || { echo "FAIL - no module at $moddir/hwaf.so"; exit 1; }
case ${HWAF_GUEST:-} in
1) base=/tmp ;;
*) base=${HWAF_TEST_TMPDIR:-${TMPDIR:-/tmp}} ;;
esac
tmp=$(mktemp -d "$base/apps.XXXXXX") || exit 1
cleanup_hooks=
cleanup() {
    eval "$cleanup_hooks"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
on_exit() { cleanup_hooks="$cleanup_hooks
$*"; }

# The rows of one run: <results>/<line>.<script>.rows, beside a stamp that
# names the kernel, the day, the script's source (a hash of it and of this
# file, so that rows of an older script are not taken for this one's) and,
# once finish() ran, the result.  tools/apps-table reads both.
app_id=$(basename "$0" .sh)
rows=${HWAF_APPS_RESULTS:+$HWAF_APPS_RESULTS/${HWAF_GUEST_KERNEL:-host}.$app_id.$apps_mode.rows}
stamp=${rows%.rows}.stamp
[ -z "$rows" ] || { mkdir -p "$HWAF_APPS_RESULTS" && : >"$rows" && printf '%s\n' \
    "kernel=${HWAF_GUEST_KERNEL_VERSION:-$(uname -r)}" "date=$(date -u +%Y-%m-%d)" \
    "source=$(cat "$0" "$(dirname "$0")/lib.sh" | sha256sum | cut -c1-16)" >"$stamp"; }

fails=0
passes=0
section_fails=0
t_start=$(date +%s)
section() { # a new group of checks (one table row); the log shows when it began
    section_fails=$fails
    echo "# $* (at $(($(date +%s) - t_start)) s)"
}
ok() { passes=$((passes + 1)); echo "ok   - $*"; }
bad() { fails=$((fails + 1)); echo "FAIL - $*"; }
finish() {
    echo "# $passes passed, $fails failed"
    [ -z "$rows" ] || echo "result=$passes passed, $fails failed" >>"$stamp"
    [ "$fails" -eq 0 ]
    exit $?
}
# The applications must be there: a missing one fails, never skips.
need() {
    for _p in "$@"; do
        command -v "$_p" >/dev/null 2>&1 || { bad "$_p not installed (tools/deps --test installs it)"; finish; }
    done
}

# The system-wide installation (both modes): /etc/ssl (the directory of
# the openssl.cnf libcrypto reads) and the modules directory, each copied
# and mounted over the original with hwaf's files added.
top_src=$(cd "$(dirname "$0")/../.." && pwd)
ossl=${OPENSSL:-openssl}
ssl_cnf=$(readlink -f "$($ossl version -d | sed 's/^OPENSSLDIR: "\(.*\)"$/\1/')/openssl.cnf")
ssl_dir=$(dirname "$ssl_cnf")
mod_dir=$($ossl version -m | sed 's/^MODULESDIR: "\(.*\)"$/\1/')
[ "$ssl_dir" = /etc/ssl ] && [ -f "$ssl_cnf" ] && [ -d "$mod_dir" ] ||
    { echo "FAIL - no /etc/ssl/openssl.cnf ($ssl_cnf) or modules directory ($mod_dir)"; exit 1; }
mkdir -p "$tmp/sys" && cp -a /etc/ssl "$tmp/sys/ssl" && cp -a "$mod_dir" "$tmp/sys/modules" &&
    cp "$top_src/examples/hwaf.cnf" "$tmp/sys/ssl/hwaf.cnf" &&
    printf '\n.include /etc/ssl/hwaf.cnf\n' >>"$tmp/sys/ssl/openssl.cnf" &&
    cp "$moddir/hwaf.so" "$tmp/sys/modules/hwaf.so" ||
    { echo "FAIL - cannot copy /etc/ssl and $mod_dir"; exit 1; }
[ "$apps_mode" = shipped ] || printf 'offload_min = 0\n' >>"$tmp/sys/ssl/hwaf.cnf"
mount --bind "$tmp/sys/ssl" /etc/ssl && mount --bind "$tmp/sys/modules" "$mod_dir" ||
    { echo "FAIL - cannot mount hwaf's system-wide files (root, a mount namespace)"; exit 1; }
unset OPENSSL_CONF OPENSSL_MODULES

# openssl.cnf files besides the system's: $tmp/default.cnf (default alone,
# the reference), $tmp/empty.cnf (no provider: for applications that load
# them themselves) and $tmp/providers.cnf (hwaf declared, not activated, as
# the mode has it: what such an application loads by name).
: >"$tmp/empty.cnf"
cat >"$tmp/default.cnf" <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
default = default_sect
[default_sect]
activate = 1
CNF
cat >"$tmp/providers.cnf" <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
hwaf = hwaf_sect
[hwaf_sect]
module = hwaf.so
$([ "$apps_mode" = shipped ] || echo "offload_min = 0")
CNF
# cnf_env CNF: env(1) arguments for openssl.cnf CNF: hwaf is the system's
# file (no OPENSSL_CONF), any other name $tmp/CNF.cnf.
cnf_env() {
    if [ "$1" = hwaf ]; then echo "-u OPENSSL_CONF"; else echo "OPENSSL_CONF=$tmp/$1.cnf"; fi
}
# the configuration cell of a row: what the mode loads
# (SUFFIX: where hwaf is, or, for "--providers ...", the application's
# own loading through providers.cnf)
mode_cell() {
    case $apps_mode:$1 in
    shipped:--providers*) echo "shipped: OPENSSL_CONF declaring hwaf, $1" ;;
    forced:--providers*) echo "forced: OPENSSL_CONF declaring hwaf with offload_min = 0, $1" ;;
    shipped:*) echo "shipped: /etc/ssl/openssl.cnf + hwaf.cnf${1:+, $1}" ;;
    forced:*) echo "forced: /etc/ssl/openssl.cnf + hwaf.cnf + offload_min = 0${1:+, $1}" ;;
    esac
}

# random_file FILE BYTES: BYTES random bytes from OpenSSL's generator with
# the default provider alone (the guest's /dev/urandom gives ~5 MB/s under
# TCG, `openssl rand` several times that).
random_file() {
    OPENSSL_CONF=$tmp/default.cnf ${OPENSSL:-openssl} rand -out "$1" "$2" &&
        [ "$(wc -c <"$1")" -eq "$2" ]
}

# with CNF LABEL CMD...: run CMD with openssl.cnf CNF (cnf_env), hwaf's
# records in $tmp/stats.LABEL (fresh), wall time in seconds in $tmp/time.LABEL.
with() {
    _cnf=$1 _label=$2
    shift 2
    rm -rf "$tmp/stats.$_label"
    mkdir -p "$tmp/stats.$_label"
    _t0=$(date +%s.%N)
    env $(cnf_env "$_cnf") HWAF_STATS="$tmp/stats.$_label" "$@"
    _rc=$?
    _t1=$(date +%s.%N)
    echo "$_t0 $_t1" | awk '{ printf "%.2f\n", $2 - $1 }' >"$tmp/time.$_label"
    return $_rc
}

# records LABEL [PROG]: the current line of each process's record of run
# LABEL (only program PROG's when given).  A record's last line is the
# current one: a sandboxed process appends (docs/config.md).
records() {
    for _f in "$tmp/stats.$1"/hwaf-stats.${2:-*}.*; do
        [ -s "$_f" ] && tail -n 1 "$_f"
    done 2>/dev/null
}
# hwaf_sum LABEL PROG FIELD...: the sum of these fields over the records of
# run LABEL (PROG empty: every program).
hwaf_sum() {
    _l=$1 _p=$2
    shift 2
    records "$_l" "$_p" | awk -v fields="$*" '
        BEGIN { n = split(fields, want, " "); for (i = 1; i <= n; i++) w[want[i]] = 1 }
        { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] in w) s += kv[2] } }
        END { printf "%.0f\n", s }'
}
# hwaf_bytes LABEL [PROG]: bytes hwaf handed to the kernel in the processes
# of run LABEL (only those of program PROG when given), all backends.
hwaf_bytes() { hwaf_sum "$1" "${2:-}" afalg_bytes devcrypto_bytes; }
# hwaf_procs LABEL [PROG]: how many processes of run LABEL handed work to hwaf.
hwaf_procs() {
    records "$1" "${2:-}" | awk '
        { for (i = 1; i <= NF; i++) { split($i, kv, "=");
            if ((kv[1] == "afalg_bytes" || kv[1] == "devcrypto_bytes") && kv[2] > 0) { n++; break } } }
        END { print n + 0 }'
}
# hwaf_soft LABEL [PROG]: bytes hwaf's software path carried in run LABEL.
hwaf_soft() { hwaf_sum "$1" "${2:-}" software_bytes; }
# hwaf_total LABEL [PROG]: all the bytes hwaf carried, kernel and software.
hwaf_total() { echo $(($(hwaf_bytes "$1" "${2:-}") + $(hwaf_soft "$1" "${2:-}"))); }

# thresholds [LABEL]: the offload thresholds hwaf reports with the system's
# file (hwaf-info), "ALGORITHM offload_min" per line, in $tmp/thresholds.
thresholds() {
    "${HWAF_INFO:-hwaf-info}" >"$tmp/info" 2>&1
    sed -n 's/^  \([A-Z][^ ]*\) [a-z]* [^ ]* offload_min=\([^ ]*\) .*/\1 \2/p' "$tmp/info" >"$tmp/thresholds"
    [ -s "$tmp/thresholds" ] || { bad "hwaf-info shows no offload thresholds"; sed 's/^/      /' "$tmp/info" | tail; }
}
# threshold ALGORITHM: its offload_min (never, or bytes), from thresholds
threshold() { awk -v a="$1" '$1 == a { print $2; exit }' "$tmp/thresholds"; }

# What the shipped mode expects: each application here hands hwaf
# operations of at most 64 KiB (openssl enc's 4 KiB updates, dgst's 8 KiB,
# TLS records of 16 KiB, SSH packets of 32 KiB, OpenVPN packets), so with
# the shipped thresholds (docs/config.md: never for a CPU driver, 65536 for
# an engine with policy throughput) every byte stays in hwaf's software
# path and none reaches the kernel.  Other thresholds (a calibration file)
# would need other expectations: the run then fails, saying so.
if [ "$apps_mode" = shipped ]; then
    thresholds
    _odd=$(awk '$2 != "never" && ($2 < 65536 || $1 !~ /-(CBC|CTR|XTS|GCM)$/)' "$tmp/thresholds")
    [ -z "$_odd" ] || { bad "thresholds other than the shipped ones (the shipped mode's expectations assume them): $_odd"; }
fi

# carried DESC LABEL MIN [PROG]: hwaf carried at least MIN bytes in run
# LABEL where the mode says: forced, through the kernel; shipped, in its
# software path, and nothing through the kernel.
carried() {
    _b=$(hwaf_bytes "$2" "${4:-}")
    if [ "$apps_mode" = shipped ]; then
        _s=$(hwaf_soft "$2" "${4:-}")
        if [ "$_b" -eq 0 ] && [ "$_s" -ge "$3" ]; then
            ok "$1: hwaf carried $_s bytes in software (>= $3), none through the kernel (shipped thresholds)"
        else
            bad "$1: hwaf carried $_s bytes in software (expected >= $3) and $_b through the kernel (expected 0)"
            ls -l "$tmp/stats.$2" | sed 's/^/      /'
        fi
    elif [ "$_b" -ge "$3" ]; then
        ok "$1: hwaf carried $_b bytes (>= $3)"
    else
        bad "$1: hwaf carried $_b bytes, expected >= $3"
        ls -l "$tmp/stats.$2" | sed 's/^/      /'
    fi
}
# engine DESC LABEL MIN [PROG]: at least MIN bytes through the kernel in
# run LABEL, whatever the mode (a threshold the operations reach)
engine() {
    _b=$(hwaf_bytes "$2" "${4:-}")
    if [ "$_b" -ge "$3" ]; then ok "$1: $_b bytes through the kernel (>= $3)"; else bad "$1: $_b bytes through the kernel, expected >= $3"; fi
}
# nokernel DESC LABEL [PROG]: nothing through the kernel in run LABEL
nokernel() {
    _b=$(hwaf_bytes "$2" "${3:-}")
    if [ "$_b" -eq 0 ]; then ok "$1: nothing through the kernel"; else bad "$1: $_b bytes through the kernel, expected none"; fi
}
# untouched DESC LABEL: hwaf carried nothing in run LABEL (the reference).
untouched() {
    _b=$(hwaf_total "$2")
    if [ "$_b" -eq 0 ]; then ok "$1: reference run without hwaf"; else bad "$1: reference run counted $_b hwaf bytes"; fi
}
same() { # DESCRIPTION FILE1 FILE2
    if cmp -s "$2" "$3"; then ok "$1"; else bad "$1 ($2 and $3 differ)"; fi
}

# row APP VERSION CONFIGURATION LABEL_HWAF LABEL_DEFAULT PAYLOAD TEST [WORKS [MORE]]:
# one line of the application table (docs/apps.md), written to
# $HWAF_APPS_RESULTS/<kernel>.<script>.<mode>.rows.  CONFIGURATION follows
# the mode's cell (mode_cell).  PAYLOAD: bytes the application moved (0
# when it cannot be known).  TEST: what the script required of run
# LABEL_HWAF's bytes (forced: through the kernel; shipped: in software,
# and then also none through the kernel), "OP N" (OP >= or <), N per
# payload byte, or in MB when PAYLOAD is 0; the cell shows it beside the
# figure, and tools/apps-table --check holds every run and the committed
# table to it.  WORKS defaults to yes when no check failed since the last
# `section`; MORE is appended to the share cell.  row_figure=kernel makes
# the figure the kernel's bytes in either mode.
row() {
    [ -n "$rows" ] || return 0
    _works=${8:-}
    [ -n "$_works" ] || { [ "$fails" -eq "$section_fails" ] && _works=yes || _works=no; }
    if [ "${row_figure:-$apps_mode}" = shipped ]; then
        _b=$(hwaf_soft "$4") _how="in software" _k="; $(hwaf_bytes "$4") bytes through the kernel (test: < 1)"
    else
        _b=$(hwaf_bytes "$4") _how="through the kernel" _k=
    fi
    _share=$(awk -v b="$_b" -v p="$6" -v t="$7" -v h="$_how" 'BEGIN {
        if (p > 0) printf "%.1f MB %s, %.2f per payload byte (test: %s)", b / 1e6, h, b / p, t
        else printf "%.1f MB %s (test: %s)", b / 1e6, h, t }')
    _tv=$(awk -v a="$(cat "$tmp/time.$4")" -v d="$(cat "$tmp/time.$5")" 'BEGIN { printf "%.2f", a / d }')
    printf '| %s | %s | %s | %s | %s%s%s | %s x (%s s / %s s) |\n' "$1" "$2" "$(mode_cell "$3")" "$_works" \
        "$_share" "$_k" "${9:+; $9}" "$_tv" "$(cat "$tmp/time.$4")" "$(cat "$tmp/time.$5")" \
        >>"$rows"
}

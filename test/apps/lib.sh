# lib.sh: shared by the application tests (sourced, POSIX sh).
#
# Every application is configured only through an openssl.cnf (OPENSSL_CONF)
# that activates hwaf and default and sets default_properties = ?provider=hwaf;
# the reference run uses one that activates default alone.  hwaf's share of
# the work is read from its per-process records (HWAF_STATS, docs/config.md),
# which the applications write without knowing it.
#
# Environment: HWAF_MODULE_DIR (hwaf.so), HWAF_TEST_TMPDIR (scratch; in the
# guest its /tmp, a tmpfs, is used for data), HWAF_APPS_RESULTS (directory
# that collects the table rows, optional), HWAF_GUEST_KERNEL (row label).

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
rows=${HWAF_APPS_RESULTS:+$HWAF_APPS_RESULTS/${HWAF_GUEST_KERNEL:-host}.$app_id.rows}
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

# The guest's drivers are CPU drivers, which hwaf by default never offloads
# (offload_min, docs/config.md): these tests prove that the kernel path
# carries an application's data, so every hwaf context here offloads.  The
# variable stands in for offload_min in every process, including those that
# load hwaf themselves (openvpn --providers).
export HWAF_OFFLOAD_MIN=0

# openssl.cnf files: $tmp/hwaf.cnf (hwaf + default, default_properties
# ?provider=hwaf) and $tmp/default.cnf (default alone).
cat >"$tmp/hwaf.cnf" <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
alg_section = evp_properties
[provider_sect]
hwaf = hwaf_sect
default = default_sect
[hwaf_sect]
module = $moddir/hwaf.so
activate = 1
[default_sect]
activate = 1
[evp_properties]
default_properties = ?provider=hwaf
CNF
# no providers at all: for applications that load them themselves
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

# random_file FILE BYTES: BYTES random bytes from OpenSSL's generator with
# the default provider alone (the guest's /dev/urandom gives ~5 MB/s under
# TCG, `openssl rand` several times that).
random_file() {
    OPENSSL_CONF=$tmp/default.cnf ${OPENSSL:-openssl} rand -out "$1" "$2" &&
        [ "$(wc -c <"$1")" -eq "$2" ]
}

# with CNF LABEL CMD...: run CMD with OPENSSL_CONF=$tmp/CNF.cnf, hwaf's
# records in $tmp/stats.LABEL (fresh), wall time in seconds in $tmp/time.LABEL.
with() {
    _cnf=$1 _label=$2
    shift 2
    rm -rf "$tmp/stats.$_label"
    mkdir -p "$tmp/stats.$_label"
    _t0=$(date +%s.%N)
    OPENSSL_CONF=$tmp/$_cnf.cnf HWAF_STATS=$tmp/stats.$_label "$@"
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
# carried DESC LABEL MIN [PROG]: hwaf carried at least MIN bytes in run LABEL.
carried() {
    _b=$(hwaf_bytes "$2" "${4:-}")
    if [ "$_b" -ge "$3" ]; then
        ok "$1: hwaf carried $_b bytes (>= $3)"
    else
        bad "$1: hwaf carried $_b bytes, expected >= $3"
        ls -l "$tmp/stats.$2" | sed 's/^/      /'
    fi
}
# untouched DESC LABEL: hwaf carried nothing in run LABEL (the reference).
untouched() {
    _b=$(hwaf_bytes "$2")
    if [ "$_b" -eq 0 ]; then ok "$1: reference run without hwaf"; else bad "$1: reference run counted $_b hwaf bytes"; fi
}
same() { # DESCRIPTION FILE1 FILE2
    if cmp -s "$2" "$3"; then ok "$1"; else bad "$1 ($2 and $3 differ)"; fi
}

# row APP VERSION CONFIGURATION LABEL_HWAF LABEL_DEFAULT PAYLOAD TEST [WORKS [MORE]]:
# one line of the application table (docs/apps.md), written to
# $HWAF_APPS_RESULTS/<kernel>.<script>.rows.  PAYLOAD: bytes the application
# moved (0 when it cannot be known).  TEST: what the script required of
# run LABEL_HWAF's bytes, "OP N" (OP >= or <), N per payload byte, or in MB
# when PAYLOAD is 0; the cell shows it beside the figure, and tools/apps-table
# --check holds every run and the committed table to it.  WORKS defaults to
# yes when no check failed since the last `section`; MORE is appended to
# the share cell.
row() {
    [ -n "$rows" ] || return 0
    _works=${8:-}
    [ -n "$_works" ] || { [ "$fails" -eq "$section_fails" ] && _works=yes || _works=no; }
    _share=$(awk -v b="$(hwaf_bytes "$4")" -v p="$6" -v t="$7" 'BEGIN {
        if (p > 0) printf "%.1f MB, %.2f per payload byte (test: %s)", b / 1e6, b / p, t
        else printf "%.1f MB (test: %s)", b / 1e6, t }')
    _tv=$(awk -v a="$(cat "$tmp/time.$4")" -v d="$(cat "$tmp/time.$5")" 'BEGIN { printf "%.2f", a / d }')
    printf '| %s | %s | %s | %s | %s%s | %s x (%s s / %s s) |\n' "$1" "$2" "$3" "$_works" \
        "$_share" "${9:+; $9}" "$_tv" "$(cat "$tmp/time.$4")" "$(cat "$tmp/time.$5")" \
        >>"$rows"
}

# Shared helpers for the guest rig scripts (sourced, not executed).

guest_die() {
    echo "hwaf-guest: error: $*" >&2
    exit 125
}
guest_warn() { echo "hwaf-guest: warning: $*" >&2; }
guest_note() {
    [ "${HWAF_GUEST_QUIET:-0}" = 1 ] || echo "hwaf-guest: $*" >&2
}

# The cache directory: $HWAF_GUEST_CACHE, else /var/cache/hwaf-guest when it
# can be written, else ~/.cache/hwaf-guest.
guest_cache_dir() {
    local d
    if [ -n "${HWAF_GUEST_CACHE:-}" ]; then
        d=$HWAF_GUEST_CACHE
    elif mkdir -p /var/cache/hwaf-guest 2>/dev/null && [ -w /var/cache/hwaf-guest ]; then
        d=/var/cache/hwaf-guest
    else
        d=${XDG_CACHE_HOME:-$HOME/.cache}/hwaf-guest
    fi
    mkdir -p "$d" || guest_die "cannot create cache directory $d"
    echo "$d"
}

# The root an ARM guest boots (tools/guest/run --arch): an extract root of
# Debian 12 (tools/guest/make-root) with what the test suite needs at run
# time: a shell and the usual tools (cli_test.sh, with-devcrypto), OpenSSL 3
# and its command line, the C++ runtime of hwaf-tests, libkcapi (the tests'
# reference), libfuse3 (the CUSE /dev/crypto server) and a static busybox
# (the initramfs's /init).
guest_foreign_suite=bookworm
guest_foreign_packages=(
    base-files base-passwd dash bash coreutils grep sed mawk diffutils findutils
    util-linux procps libc-bin
    busybox-static
    openssl libssl3 ca-certificates
    libstdc++6 libgcc-s1
    libkcapi1 kcapi-tools
    libfuse3-3 fuse3
)
# guest_foreign_root ARCH [make-root options]: print that root's directory,
# making it first when needed.
guest_foreign_root() {
    local arch=$1
    shift
    "$(dirname "${BASH_SOURCE[0]}")/make-root" --arch "$arch" --extract --print "$@" \
        "$guest_foreign_suite" "${guest_foreign_packages[@]}"
}

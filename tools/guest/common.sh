# Shared helpers for the guest rig scripts (sourced, not executed).

guest_die() {
    echo "hwaf-guest: error: $*" >&2
    exit 125
}
guest_warn() { echo "hwaf-guest: warning: $*" >&2; }
guest_note() {
    [ "${HWAF_GUEST_QUIET:-0}" = 1 ] || echo "hwaf-guest: $*" >&2
}

# guest_share_crash CONSOLE_LOG: when every place the guest kernel faulted
# (x86 "RIP: 0010:", arm64 "pc : ", arm "PC is at ") is inside its 9p file
# sharing (fs/9p, net/9p, netfs), prints the first and succeeds; fails when
# the log shows no fault or any fault elsewhere (crypto, AF_ALG, CUSE, ...).
guest_share_crash() {
    local sites site first=
    sites=$(grep -oE '(RIP: 0010:|pc : |PC is at )[A-Za-z0-9_.]+\+0x[0-9a-f]+/0x[0-9a-f]+( \[[A-Za-z0-9_]+\])?' \
        "$1" 2>/dev/null) || return 1
    while IFS= read -r site; do
        site=${site#RIP: 0010:}
        site=${site#pc : }
        site=${site#PC is at }
        case $site in
        v9fs_* | p9_* | netfs_* | *' [9p]' | *' [9pnet]' | *' [9pnet_virtio]' | *' [netfs]') ;;
        *) return 1 ;;
        esac
        [ -n "$first" ] || first=$site
    done <<<"$sites"
    echo "$first"
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

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

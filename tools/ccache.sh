# Sourced by tools/build*: hwaf_ccache, the cmake options that put ccache
# in front of the compilers when it is installed (empty otherwise), with
# its cache in $HWAF_CCACHE_DIR (default /var/cache/hwaf-build/ccache when
# it can be written, else ~/.cache/hwaf-build/ccache).  A missing or
# emptied cache only costs a full compilation.
hwaf_ccache=()
if command -v ccache >/dev/null 2>&1; then
    if [ -z "${HWAF_CCACHE_DIR:-}" ]; then
        if mkdir -p /var/cache/hwaf-build/ccache 2>/dev/null && [ -w /var/cache/hwaf-build/ccache ]; then
            HWAF_CCACHE_DIR=/var/cache/hwaf-build/ccache
        else
            HWAF_CCACHE_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/hwaf-build/ccache
        fi
    fi
    mkdir -p "$HWAF_CCACHE_DIR"
    export CCACHE_DIR=$HWAF_CCACHE_DIR
    # Trees in other directories (fresh clones) share the cache.
    export CCACHE_BASEDIR=/ CCACHE_NOHASHDIR=1
    export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-2G}
    hwaf_ccache=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

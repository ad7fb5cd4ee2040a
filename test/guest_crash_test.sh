#!/bin/bash
# guest_crash_test.sh: when tools/guest/run boots a guest again after a
# kernel crash that came after the command started.
#
#   guest_crash_test.sh host SRCDIR      guest_share_crash on console excerpts
#   guest_crash_test.sh rig SRCDIR       a guest whose kernel crashes outside
#                                        9p (sysrq): failed, the command run once
#
# Only a crash inside the guest's own 9p file sharing (fs/9p, net/9p, netfs)
# runs the command again; any fault elsewhere (crypto, AF_ALG, CUSE) fails
# the run as it is.
set -u
mode=${1:?mode} src=${2:?source directory}
# shellcheck source=../tools/guest/common.sh
. "$src/tools/guest/common.sh"
fails=0
ok() { echo "ok   - $*"; }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }

case $mode in
host)
    t=$(mktemp -d) || exit 1
    trap 'rm -rf "$t"' EXIT
    # x86-64, Debian 6.12: a crash the rig has met (trimmed console)
    cat >"$t/x86-9p" <<'LOG'
[   96.559421]  v9fs_fid_lookup+0x56/0x560 [9p]
[   96.559529]  v9fs_vfs_lookup+0x84/0x210 [9p]
[   96.560055]  do_syscall_64+0x87/0x1b0
[   96.560233] RIP: 0033:0x7fd5ded02001
[   96.560702] Modules linked in: crypto_user sha512_ssse3 aesni_intel 9p 9pnet_virtio 9pnet netfs cuse xts gcm algif_aead algif_hash algif_skcipher af_alg
[   96.561249] ---[ end trace 0000000000000000 ]---
[   96.561352] RIP: 0010:v9fs_fid_find+0x9e/0xe0 [9p]
[   96.561597] Kernel panic - not syncing: Fatal exception in interrupt
LOG
    # x86-64: a crash inside AF_ALG while a 9p lookup is on the stack
    cat >"$t/x86-afalg" <<'LOG'
[   12.100000] RIP: 0010:af_alg_sendmsg+0x2c1/0x8a0 [af_alg]
[   12.100100]  v9fs_vfs_lookup+0x84/0x210 [9p]
[   12.100200] Kernel panic - not syncing: Fatal exception
LOG
    # a 9p warning first, then a crash in the crypto API
    cat >"$t/x86-mixed" <<'LOG'
[   20.000000] RIP: 0010:p9_client_rpc+0x11a/0x3b0 [9pnet]
[   20.500000] RIP: 0010:crypto_skcipher_encrypt+0x1d/0x40
[   20.600000] Kernel panic - not syncing: Fatal exception
LOG
    # sysrq crash on 6.1 (what "rig" mode provokes): a panic, no kernel fault
    cat >"$t/x86-sysrq" <<'LOG'
[    5.901784] sysrq: Trigger a crash
[    5.902968] Kernel panic - not syncing: sysrq triggered crash
[    5.903902]  sysrq_handle_crash+0x16/0x20
[    5.903902]  __handle_sysrq.cold+0x41/0x11c
[    5.903902]  write_sysrq_trigger+0x24/0x40
[    5.903902] RIP: 0033:0x7f7394f60350
LOG
    # arm64 and 32-bit ARM oops formats
    printf '%s\n' '[   30.0] pc : v9fs_fid_find+0x5c/0xe0 [9p]' '[   30.1] lr : v9fs_fid_lookup+0x40/0x3a0 [9p]' \
        >"$t/arm64-9p"
    printf '%s\n' '[   30.0] PC is at netfs_read_folio+0x20/0x2e4 [netfs]' >"$t/armhf-netfs"
    printf '%s\n' '[   30.0] pc : cuse_read_iter+0x30/0x90 [cuse]' >"$t/arm64-cuse"
    # no fault at all (a guest that powered off or lost its status)
    printf '%s\n' '[    5.0] reboot: Power down' >"$t/none"

    for c in "x86-9p v9fs_fid_find+0x9e/0xe0 [9p]" "arm64-9p v9fs_fid_find+0x5c/0xe0 [9p]" \
        "armhf-netfs netfs_read_folio+0x20/0x2e4 [netfs]"; do
        f=${c%% *} want=${c#* }
        got=$(guest_share_crash "$t/$f") && [ "$got" = "$want" ] &&
            ok "$f: a crash in the 9p sharing ($got)" || bad "$f: got '${got:-}' (want '$want')"
    done
    for f in x86-afalg x86-mixed x86-sysrq arm64-cuse none; do
        got=$(guest_share_crash "$t/$f") && bad "$f: taken for a 9p crash ($got)" ||
            ok "$f: not a crash in the 9p sharing"
    done
    guest_share_crash "$t/absent" >/dev/null && bad "a missing console taken for a 9p crash" ||
        ok "a missing console: not a crash in the 9p sharing"
    ;;
rig)
    # The command counts its runs in a shared file, then crashes the kernel.
    # It starts in a directory under /tmp (which the guest shares read-only,
    # its own /tmp being a tmpfs) that holds the --rw one: the writable share
    # must stay writable below the read-only one.
    top=$(mktemp -d /tmp/hwaf-crash.XXXXXX) && d=$top/rw && mkdir "$d" || exit 1
    trap 'rm -rf "$top"' EXIT
    (cd "$top" && "$src/tools/guest/run" --kernel 6.1 --rw "$d" --timeout 300 -- \
        sh -c "echo run >>'$d/runs'; sync; echo c >/proc/sysrq-trigger; sleep 30" \
        >"$d/out" 2>"$d/err")
    rc=$?
    [ $rc = 125 ] && ok "a kernel crash outside 9p fails the run (exit 125)" ||
        { bad "exit $rc after a kernel crash (want 125)"; tail -20 "$d/err"; }
    grep -q 'sysrq_handle_crash' "$d/err" && ok "the console shows the crash" ||
        bad "no sysrq_handle_crash in the console shown"
    runs=$(wc -l <"$d/runs" 2>/dev/null || echo 0)
    [ "$runs" = 1 ] && ok "the command ran once" || bad "the command ran $runs times (want 1)"
    grep -q 'running the command again' "$d/err" && bad "the run was repeated" ||
        ok "no second run announced"
    ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
echo "$fails failed"
[ $fails = 0 ]

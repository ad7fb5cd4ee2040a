#!/bin/sh
# ssh.sh: OpenSSH with hwaf.  sshd listens on 127.0.0.1 in the guest; scp
# moves a file (HWAF_APPS_SSH_MIB, default 16 MiB) each way with -c
# aes128-ctr and -c aes256-ctr, MAC hmac-sha2-256-etm@openssh.com, hwaf in
# the client through openssl.cnf alone.  Then sshd itself with hwaf in its
# openssl.cnf: its sandboxed pre-authentication child must not be killed
# (SIGSYS) any more; while hwaf has no software path the session fails
# cleanly, and once it has one the data must arrive and be counted on both
# ends.  docs/apps.md explains.
# Needs root; runs in a private mount namespace with a tmpfs on /run (sshd's
# privilege separation directory; the guest's root is read-only).
if [ -z "${HWAF_APPS_UNSHARED:-}" ]; then
    HWAF_APPS_UNSHARED=1 exec unshare -m sh -c 'mount -t tmpfs tmpfs /run && exec sh "$0"' "$0"
fi
. "$(dirname "$0")/lib.sh"
need ssh scp ssh-keygen cmp
sshd=/usr/sbin/sshd
[ -x $sshd ] || { bad "no $sshd (Debian package openssh-server)"; finish; }
mib=${HWAF_APPS_SSH_MIB:-16}
size=$((mib * 1024 * 1024))
ver=$(ssh -V 2>&1 | sed 's/,.*//; s/^OpenSSH_//')
port=$((20000 + $$ % 20000))
ip link set lo up 2>/dev/null
mkdir -p /run/sshd && chmod 755 /run/sshd

ssh-keygen -q -t ed25519 -N '' -f "$tmp/hostkey" && ssh-keygen -q -t ed25519 -N '' -f "$tmp/id" &&
    cp "$tmp/id.pub" "$tmp/authorized_keys" || { bad "ssh-keygen failed"; finish; }
cat >"$tmp/sshd_config" <<CFG
ListenAddress 127.0.0.1:$port
HostKey $tmp/hostkey
PidFile $tmp/sshd.pid
AuthorizedKeysFile $tmp/authorized_keys
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
Ciphers aes128-ctr,aes256-ctr
MACs hmac-sha2-256-etm@openssh.com
Subsystem sftp internal-sftp
LogLevel ${HWAF_APPS_SSHD_LOGLEVEL:-INFO}
${HWAF_APPS_SSHD_EXTRA:-}
CFG
head -c "$size" /dev/urandom >"$tmp/data"

sshd_pid=
on_exit '[ -z "$sshd_pid" ] || kill "$sshd_pid" 2>/dev/null'
start_sshd() { # CNF LABEL
    rm -rf "$tmp/stats.$2"; mkdir -p "$tmp/stats.$2"
    env OPENSSL_CONF="$tmp/$1.cnf" HWAF_STATS="$tmp/stats.$2" $sshd -D -e -f "$tmp/sshd_config" \
        2>"$tmp/sshd.$2.log" &
    sshd_pid=$!
    _i=0
    until ss -Hltn "sport = :$port" | grep -q .; do
        _i=$((_i + 1))
        [ $_i -lt 300 ] && kill -0 $sshd_pid 2>/dev/null ||
            { bad "sshd did not start"; sed 's/^/      /' "$tmp/sshd.$2.log"; return 1; }
        sleep 0.1
    done
}
stop_sshd() {
    kill $sshd_pid; wait $sshd_pid 2>/dev/null; sshd_pid=
    [ "$fails" -eq "$section_fails" ] || sed 's/^/      sshd: /' "$tmp/sshd.$1.log" | tail -15
}
scp_() { # CNF LABEL CIPHER SRC DST
    with "$1" "$2" scp -q -F /dev/null -i "$tmp/id" -P "$port" -c "$3" \
        -o MACs=hmac-sha2-256-etm@openssh.com -o BatchMode=yes \
        -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR \
        "$4" "$5" 2>"$tmp/scp.err"
}

for c in aes128-ctr aes256-ctr; do
    section "scp -c $c, hwaf in the client"
    start_sshd default "sshd.$c" || continue
    rm -f "$tmp/up" "$tmp/down"
    scp_ hwaf "up.$c" "$c" "$tmp/data" "root@127.0.0.1:$tmp/up" ||
        { bad "scp -c $c upload failed"; sed 's/^/      /' "$tmp/scp.err" | head; }
    same "scp -c $c: $mib MiB client to server" "$tmp/up" "$tmp/data"
    scp_ hwaf "down.$c" "$c" "root@127.0.0.1:$tmp/data" "$tmp/down" ||
        { bad "scp -c $c download failed"; sed 's/^/      /' "$tmp/scp.err" | head; }
    same "scp -c $c: $mib MiB server to client" "$tmp/down" "$tmp/data"
    scp_ default "up.$c.ref" "$c" "$tmp/data" "root@127.0.0.1:$tmp/up" || bad "reference scp failed"
    stop_sshd "sshd.$c"
    carried "scp -c $c upload: client" "up.$c" "$size" ssh
    carried "scp -c $c download: client" "down.$c" "$size" ssh
    untouched "scp -c $c" "up.$c.ref"
    row "scp -c $c, hwaf in the client, sshd without" "$ver" "openssl.cnf (client)" "up.$c" "up.$c.ref" "$size"
done

# sshd with hwaf: count the kernel's seccomp kills around it (audit lines
# "sig=31"); dmesg needs root, which this test has.
section "sshd with hwaf in its openssl.cnf"
kills() { dmesg 2>/dev/null | grep -c 'sig=31' || true; }
k0=$(kills)
start_sshd hwaf sshd.hwaf && {
    rm -f "$tmp/up"
    if scp_ hwaf up.srv aes128-ctr "$tmp/data" "root@127.0.0.1:$tmp/up"; then
        stop_sshd sshd.hwaf
        same "sshd with hwaf: $mib MiB client to server" "$tmp/up" "$tmp/data"
        carried "sshd with hwaf: server" sshd.hwaf "$size" sshd
        works=
    else
        stop_sshd sshd.hwaf
        works="no: the key exchange is refused in sshd's sandboxed child (docs/apps.md)"
        echo "# sshd with hwaf: the session failed (no software path yet): $(tail -1 "$tmp/scp.err")"
    fi
    k1=$(kills)
    if [ "$k1" = "$k0" ]; then
        ok "sshd with hwaf: no process killed by its seccomp filter"
    else
        bad "sshd with hwaf: $((k1 - k0)) process(es) killed with SIGSYS"
        dmesg | grep 'sig=31' | tail -3 | sed 's/^/      /'
    fi
    row "scp -c aes128-ctr, hwaf in the client and sshd" "$ver" "openssl.cnf, both ends" up.srv up.aes128-ctr.ref "$size" "$works"
}
finish

#!/bin/sh
# ssh.sh: OpenSSH with hwaf.  sshd listens on 127.0.0.1 in the guest; scp
# moves a file (HWAF_APPS_SSH_MIB, default 16 MiB) each way with -c
# aes128-ctr and -c aes256-ctr (MAC hmac-sha2-256-etm@openssh.com) and with
# -c aes128-gcm@openssh.com and -c aes256-gcm@openssh.com (AES-GCM, whose
# IV OpenSSH takes from EVP_CTRL_GCM_IV_GEN before every packet), hwaf in
# the client (installed system-wide, lib.sh), then hwaf in sshd alone (GCM), then
# hwaf in the client and in sshd; with GCM an ssh command's output too.
# sshd's sandboxed pre-authentication child cannot make kernel calls: hwaf
# must fall back to software there (counted in its record, no process
# killed by SIGSYS) while the session process after authentication carries
# the transfer through the kernel.  OpenSSH 10 runs the server as three
# programs (sshd listens, sshd-session serves a connection and forks its
# session process, the sandboxed sshd-auth authenticates), 9.2 as sshd
# alone: the server's records are those of every program named sshd*.
# docs/apps.md explains.
# Needs root (lib.sh: a private mount namespace, a tmpfs on /run for sshd's
# privilege separation directory).
. "$(dirname "$0")/lib.sh"
need ssh scp ssh-keygen cmp
sshd=/usr/sbin/sshd
[ -x $sshd ] || { bad "no $sshd (Debian package openssh-server)"; finish; }
mib=${HWAF_APPS_SSH_MIB:-16}
[ -n "${HWAF_APPS_SSH_MIB:-}" ] || [ "$apps_mode" = forced ] || mib=4 # (shipped: where the work goes, not its pace)
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
Ciphers aes128-ctr,aes256-ctr,aes128-gcm@openssh.com,aes256-gcm@openssh.com
MACs hmac-sha2-256-etm@openssh.com
Subsystem sftp internal-sftp
LogLevel ${HWAF_APPS_SSHD_LOGLEVEL:-INFO}
${HWAF_APPS_SSHD_EXTRA:-}
CFG
random_file "$tmp/data" "$size" || { bad "cannot make $mib MiB of data"; finish; }

sshd_pid=
cat_pid=
on_exit '[ -z "$sshd_pid" ] || kill "$sshd_pid" 2>/dev/null'
# sshd's stderr goes through a pipe: its sandboxed child may not write to a
# regular file (RLIMIT_FSIZE 0: SIGXFSZ), and with HWAF_DEBUG hwaf logs there.
start_sshd() { # CNF LABEL [HWAF_DEBUG]
    rm -rf "$tmp/stats.$2" "$tmp/sshd.fifo"; mkdir -p "$tmp/stats.$2"; mkfifo "$tmp/sshd.fifo"
    cat "$tmp/sshd.fifo" >"$tmp/sshd.$2.log" &
    cat_pid=$!
    env $(cnf_env "$1") HWAF_STATS="$tmp/stats.$2" ${3:+HWAF_DEBUG=$3} \
        $sshd -D -e -f "$tmp/sshd_config" 2>"$tmp/sshd.fifo" &
    sshd_pid=$!
    _i=0
    until ss -Hltn "sport = :$port" | grep -q .; do
        _i=$((_i + 1))
        [ $_i -lt 300 ] && kill -0 $sshd_pid 2>/dev/null ||
            { bad "sshd did not start"; wait $cat_pid; sed 's/^/      /' "$tmp/sshd.$2.log"; return 1; }
        sleep 0.1
    done
}
stop_sshd() {
    kill $sshd_pid; wait $sshd_pid 2>/dev/null; sshd_pid=
    wait $cat_pid
    [ "$fails" -eq "$section_fails" ] || grep -v '^\[hwaf' "$tmp/sshd.$1.log" | sed 's/^/      sshd: /' | tail -15
}
scp_() { # CNF LABEL CIPHER SRC DST
    with "$1" "$2" scp -q -F /dev/null -i "$tmp/id" -P "$port" -c "$3" \
        -o MACs=hmac-sha2-256-etm@openssh.com -o BatchMode=yes \
        -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR \
        "$4" "$5" 2>"$tmp/scp.err"
}

# ssh_ CNF LABEL CIPHER COMMAND: an ssh command on the server, its output
# on stdout.
ssh_() {
    with "$1" "$2" ssh -F /dev/null -i "$tmp/id" -p "$port" -c "$3" \
        -o MACs=hmac-sha2-256-etm@openssh.com -o BatchMode=yes \
        -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR \
        root@127.0.0.1 "$4" 2>"$tmp/scp.err"
}

# both_ways UP_LABEL DOWN_LABEL CIPHER DESC [CNF]: scp $tmp/data to the
# server and back with the client's openssl.cnf CNF (default hwaf), each
# copy compared with the original.
both_ways() {
    rm -f "$tmp/up" "$tmp/down"
    scp_ "${5:-hwaf}" "$1" "$3" "$tmp/data" "root@127.0.0.1:$tmp/up" ||
        { bad "$4: upload failed"; sed 's/^/      /' "$tmp/scp.err" | head; }
    same "$4: $mib MiB client to server" "$tmp/up" "$tmp/data"
    scp_ "${5:-hwaf}" "$2" "$3" "root@127.0.0.1:$tmp/data" "$tmp/down" ||
        { bad "$4: download failed"; sed 's/^/      /' "$tmp/scp.err" | head; }
    same "$4: $mib MiB server to client" "$tmp/down" "$tmp/data"
}

# command_out LABEL CIPHER DESC [CNF]: `ssh ... cat` of $tmp/data (the
# server's output, one GCM message per packet) compared with the original.
command_out() {
    rm -f "$tmp/cmd.out"
    ssh_ "${4:-hwaf}" "$1" "$2" "cat $tmp/data" >"$tmp/cmd.out" ||
        { bad "$3: ssh command failed"; sed 's/^/      /' "$tmp/scp.err" | head; }
    same "$3: ssh cat, $mib MiB" "$tmp/cmd.out" "$tmp/data"
}

ciphers="aes128-ctr aes256-ctr aes128-gcm@openssh.com aes256-gcm@openssh.com"
for c in $ciphers; do
    section "scp -c $c, hwaf in the client"
    start_sshd default "sshd.$c" || continue
    both_ways "up.$c" "down.$c" "$c" "scp -c $c"
    scp_ default "up.$c.ref" "$c" "$tmp/data" "root@127.0.0.1:$tmp/up" || bad "reference scp failed"
    case $c in *gcm*) command_out "cmd.$c" "$c" "ssh -c $c, hwaf in the client" ;; esac
    stop_sshd "sshd.$c"
    carried "scp -c $c upload: client" "up.$c" "$size" ssh
    carried "scp -c $c download: client" "down.$c" "$size" ssh
    case $c in *gcm*) carried "ssh -c $c command: client" "cmd.$c" "$size" ssh ;; esac
    untouched "scp -c $c" "up.$c.ref"
    row "scp -c $c, $mib MiB, hwaf in the client, sshd without" "$ver" "client" \
        "up.$c" "up.$c.ref" "$size" ">= 1"
done

# sshd with hwaf: forced, with the debug log (on the pipe) that names the
# sandboxed children's fallbacks; shipped, with no hwaf variable at all.
dbg=1
[ "$apps_mode" = forced ] || dbg=
# sshd with hwaf: count the kernel's seccomp kills around it (audit lines
# "sig=31"); dmesg needs root, which this test has.
kills() { dmesg 2>/dev/null | grep -c 'sig=31' || true; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
ppb() { awk -v b="$1" -v p="$size" 'BEGIN { printf "%.2f", b / p }'; }
kb() { awk -v b="$1" 'BEGIN { printf "%.1f kB", b / 1e3 }'; }
server='sshd*'
# by_program LABEL PROG: the kernel bytes of run LABEL per program (record
# files hwaf-stats.<program>.<pid>), e.g. "sshd 512, sshd-session 33554432"
by_program() {
    for _f in "$tmp/stats.$1"/hwaf-stats.$2.*; do
        [ -s "$_f" ] || continue
        _n=${_f##*/hwaf-stats.}
        echo "${_n%.*} $(tail -n 1 "$_f")"
    done | awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "=")
                    if (kv[1] == "afalg_bytes" || kv[1] == "devcrypto_bytes") b[$1] += kv[2] } }
                END { for (n in b) printf "%s %.0f\n", n, b[n] }' | sort | paste -sd, - | sed 's/,/, /g'
}
# sshd_checks LABEL CIPHER DESC: no process of sshd run LABEL killed by its
# seccomp filter (kills() before the run in $k0) or by a signal; the
# sandboxed pre-authentication children served in software, counted and
# logged.  Leaves sb (software bytes), fb (fallbacks), kb (kernel bytes) and
# share (the kernel's percentage).
sshd_checks() {
    k1=$(kills)
    if [ "$k1" = "$k0" ]; then
        ok "$3: no process killed by its seccomp filter"
    else
        bad "$3: $((k1 - k0)) process(es) killed with SIGSYS"
        dmesg | grep 'sig=31' | tail -3 | sed 's/^/      /'
    fi
    if grep -q 'terminated by signal' "$tmp/sshd.$1.log"; then
        bad "$3: an sshd child died of a signal"
        grep 'terminated by signal' "$tmp/sshd.$1.log" | head -3 | sed 's/^/      /'
    fi
    kb=$(hwaf_bytes "$1" "$server")
    sb=$(hwaf_soft "$1" "$server") fb=0
    if [ "$apps_mode" = shipped ]; then
        # no debug log: the sandboxed children's work goes unrecorded, and
        # with the shipped thresholds they make no kernel call to refuse
        share=0
        echo "# sshd: $kb bytes through the kernel, $sb in software"
        return 0
    fi
    # The sandboxed pre-authentication children (one per connection) cannot
    # write their records; their unload lines in the debug log (a pipe)
    # give their software work and the fallbacks, logged with the reason.
    log=$tmp/sshd.$1.log
    nf=$(grep -c 'sandboxed, no kernel calls; served in software instead' "$log" || true)
    set -- "$@" $(sed -n 's/.*unload: .* software [0-9]* ops \([0-9]*\) bytes, fallbacks [0-9]* descriptors \([0-9]*\) sandbox.*/\1 \2/p' "$log" |
        awk '$2 > 0 { sb += $1; fb += $2; n++ } END { printf "%.0f %d %d\n", sb, fb, n }')
    sb=$(($4 + sb)) fb=$5 nchild=$6
    if [ "$nchild" -ge 2 ] && [ "$nf" -ge "$fb" ] && [ "$fb" -gt 0 ]; then
        ok "$3: $nchild sandboxed children served in software ($fb fallbacks logged, $sb bytes)"
    else
        bad "$3: sandboxed children $nchild (2 expected), fallbacks logged $nf, counted $fb"
        grep 'unload:\|served in software' "$log" | head -8 | sed 's/^/      /'
    fi
    share=$(awk -v k="$kb" -v s="$sb" 'BEGIN { if (k + s > 0) printf "%.2f", 100 * k / (k + s); else print 0 }')
    echo "# sshd: $kb bytes through the kernel, $sb in software ($fb fallbacks): $share % kernel;" \
        "by program: $(by_program "$1" "$server")"
}

# GCM with hwaf in sshd alone: the client is the default provider's, so
# every packet hwaf seals or opens must be the default provider's GCM.
for c in aes128-gcm@openssh.com aes256-gcm@openssh.com; do
    section "scp -c $c, hwaf in sshd, client without"
    k0=$(kills)
    start_sshd hwaf "sshd.srv.$c" $dbg || continue
    both_ways "srv.$c" "srv.down.$c" "$c" "scp -c $c, hwaf in sshd alone" default
    command_out "srv.cmd.$c" "$c" "ssh -c $c, hwaf in sshd alone" default
    stop_sshd "sshd.srv.$c"
    sshd_checks "sshd.srv.$c" "$c" "scp -c $c, hwaf in sshd alone"
    untouched "scp -c $c, the client" "srv.$c"
    # The session processes carry both copies and the command's output
    # through the kernel (one GCM pass: 3x the payload), less at most the
    # last MiB of each of the three records (rewritten after every MiB: a
    # session process ends with _exit(), docs/config.md).
    carried "scp -c $c, hwaf in sshd alone: server, both transfers and the command" \
        "sshd.srv.$c" $((3 * size - 3 * 1048576)) "$server"
    # the row's time: the upload's, against the reference without hwaf
    cp "$tmp/time.srv.$c" "$tmp/time.sshd.srv.$c"
    more="sshd, both copies and an ssh command's output: $share % kernel, $(kb "$sb") in software (sandboxed pre-auth children, $fb fallbacks)"
    [ "$apps_mode" = forced ] || more="sshd, both copies and an ssh command's output: $(kb "$sb") in software, $(kb "$kb") through the kernel (test: < 0.001)"
    row "scp -c $c, $mib MiB, hwaf in sshd, client without" "$ver" "sshd" \
        "sshd.srv.$c" "up.$c.ref" "$size" ">= 2" "" "$more"
done

for c in $ciphers; do
    section "scp -c $c, hwaf in the client and in sshd"
    k0=$(kills)
    start_sshd hwaf "sshd.hwaf.$c" $dbg || continue
    both_ways "both.$c" "both.down.$c" "$c" "scp -c $c, hwaf in sshd"
    case $c in *gcm*) command_out "both.cmd.$c" "$c" "ssh -c $c, hwaf in sshd and the client" ;; esac
    stop_sshd "sshd.hwaf.$c"
    carried "scp -c $c, hwaf in sshd: client, upload" "both.$c" "$size" ssh
    carried "scp -c $c, hwaf in sshd: client, download" "both.down.$c" "$size" ssh
    # The server: the session process after authentication carries both
    # transfers through the kernel (CTR: cipher and MAC, GCM: one pass, and
    # the command's output: >= 2x the payload either way).
    carried "scp -c $c, hwaf in sshd: server, both transfers" "sshd.hwaf.$c" $((2 * size)) "$server"
    sshd_checks "sshd.hwaf.$c" "$c" "scp -c $c, hwaf in sshd"
    what="both copies"
    case $c in *gcm*) what="both copies and an ssh command's output" ;; esac
    more="sshd, $what: $(mb "$kb") through the kernel, $(ppb "$kb") per payload byte (test: >= 2), $(kb "$sb") in software (sandboxed pre-auth children, $fb fallbacks): $share % kernel"
    [ "$apps_mode" = forced ] || more="sshd, $what: $(mb "$sb") in software, $(ppb "$sb") per payload byte (test: >= 2), $(kb "$kb") through the kernel (test: < 0.001)"
    row "scp -c $c, $mib MiB, hwaf in the client and sshd" "$ver" "both ends" \
        "both.$c" "up.$c.ref" "$size" ">= 1" "" "$more"
done
finish

#!/bin/sh
# tls.sh: openssl s_server and s_client over loopback, TLS 1.2 with
# AES128-SHA256 and ECDHE-RSA-AES256-SHA384, encrypt-then-MAC on and off,
# 16 MiB each way (HWAF_APPS_TLS_MIB); TLS 1.2 ECDHE-RSA-AES128-GCM-SHA256
# and TLS 1.3 TLS_AES_128_GCM_SHA256 (AES-GCM records) and curl against the
# same server, 4 MiB each (HWAF_APPS_TLS_SMALL_MIB).  hwaf in every process
# (installed system-wide, lib.sh); every byte compared; the reference runs use the
# default provider in the same guest, one after the other, never beside a
# timed run.
. "$(dirname "$0")/lib.sh"
need openssl curl cmp ss
OPENSSL=${OPENSSL:-openssl}
big_mib=${HWAF_APPS_TLS_MIB:-16}
small_mib=${HWAF_APPS_TLS_SMALL_MIB:-4}
# the shipped mode checks where the work goes, not the kernel's pace: less data
[ "$apps_mode" = forced ] || big_mib=${HWAF_APPS_TLS_MIB:-4} small_mib=${HWAF_APPS_TLS_SMALL_MIB:-2}
sized() { # MIB: $tmp/data holds the first MIB MiB of $tmp/data.big
    mib=$1 size=$(($1 * 1024 * 1024))
    head -c "$size" "$tmp/data.big" >"$tmp/data"
}
ver=$($OPENSSL version | awk '{ print $2 }')
curlver=$(curl --version | awk 'NR == 1 { print $2 }')
port=$((20000 + $$ % 20000))
[ "${HWAF_GUEST:-0}" != 1 ] || ip link set lo up 2>/dev/null

random_file "$tmp/data.big" $((big_mib * 1024 * 1024)) || { bad "cannot make $big_mib MiB of data"; finish; }
OPENSSL_CONF=$tmp/default.cnf $OPENSSL req -x509 -newkey rsa:2048 -nodes -days 2 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>"$tmp/err" ||
    { bad "cannot make a certificate"; cat "$tmp/err"; finish; }

srv_pid=
on_exit '[ -z "$srv_pid" ] || kill "$srv_pid" 2>/dev/null'
# server CNF LABEL OUT ARGS...: s_server on $port in the background, one
# connection, its stdout in OUT; waits until it listens.
server() {
    _cnf=$1 _label=$2 _out=$3
    shift 3
    (cd "$tmp" && exec env $(cnf_env "$_cnf") HWAF_STATS="$tmp/stats.$_label" \
        $OPENSSL s_server -accept "127.0.0.1:$port" -cert "$tmp/cert.pem" -key "$tmp/key.pem" \
        -naccept 1 -quiet "$@" <>"$tmp/srv.in" >"$_out" 2>"$tmp/srv.err") &
    srv_pid=$!
    _i=0
    while [ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; do
        _i=$((_i + 1))
        [ $_i -lt 300 ] || { bad "s_server did not start"; cat "$tmp/srv.err"; reap; return 1; }
        kill -0 "$srv_pid" 2>/dev/null || { bad "s_server died"; cat "$tmp/srv.err"; return 1; }
        sleep 0.1
    done
}
reap() { # wait for the server; its status must be 0
    _i=0
    while kill -0 "$srv_pid" 2>/dev/null; do
        _i=$((_i + 1))
        [ $_i -lt 600 ] || { kill "$srv_pid"; bad "s_server did not finish"; break; }
        sleep 0.1
    done
    wait "$srv_pid" || { bad "s_server failed"; sed 's/^/      /' "$tmp/srv.err" | head; }
    srv_pid=
}
# suite CS: the options that pick cipher suite CS, TLS 1.3 for TLS_* names.
suite() {
    case $1 in
    TLS_*) echo "-tls1_3 -ciphersuites $1" ;;
    *) echo "-tls1_2 -cipher $1" ;;
    esac
}
# s_server ends the session at the end of its stdin: give it one that never ends
mkfifo "$tmp/srv.in"

# upload CNF LABEL CIPHER ETM: s_client sends $tmp/data, the server writes it out.
upload() {
    rm -rf "$tmp/stats.$2.srv"
    mkdir -p "$tmp/stats.$2.srv"
    server "$1" "$2.srv" "$tmp/up.out" $(suite "$3") $4 || return 1
    with "$1" "$2" $OPENSSL s_client -connect "127.0.0.1:$port" $(suite "$3") $4 \
        -nocommands -quiet -no_ign_eof <"$tmp/data" >/dev/null 2>"$tmp/cli.err" ||
        { bad "s_client upload failed"; sed 's/^/      /' "$tmp/cli.err" | head; }
    reap
    cp "$tmp/up.out" "$tmp/up.data"
}
# download CNF LABEL CIPHER ETM: the server sends $tmp/data (-WWW) to s_client.
download() {
    rm -rf "$tmp/stats.$2.srv"
    mkdir -p "$tmp/stats.$2.srv"
    server "$1" "$2.srv" "$tmp/srv.out" -WWW $(suite "$3") $4 || return 1
    printf 'GET /data HTTP/1.0\r\n\r\n' >"$tmp/get"
    with "$1" "$2" $OPENSSL s_client -connect "127.0.0.1:$port" $(suite "$3") $4 \
        -quiet -ign_eof <"$tmp/get" >"$tmp/down.out" 2>"$tmp/cli.err" ||
        { bad "s_client download failed"; sed 's/^/      /' "$tmp/cli.err" | head; }
    reap
    tail -c "$size" "$tmp/down.out" >"$tmp/down.data"
}

# MAC-then-encrypt AES128-SHA256: libssl first asks for the "stitched"
# AES-128-CBC-HMAC-SHA256 cipher, which only the default provider has (on
# CPUs with AES-NI, as in the guest); hwaf then carries no records, and the
# check says so instead of pretending otherwise.
stitched() { [ "$1$2" = AES128-SHA256-no_etm ] && grep -q aes /proc/cpuinfo; }
both_ends() { # DESC LABEL: the client and the server of run LABEL
    if stitched "$cs" "$etm"; then
        _c=$(hwaf_total "$2") _s=$(hwaf_total "$2.srv")
        if [ "$_c" -lt "$size" ] && [ "$_s" -lt "$size" ]; then
            ok "$1: records through default's stitched AES-128-CBC-HMAC-SHA256 (hwaf: $_c + $_s bytes)"
        else
            bad "$1: expected the stitched cipher, hwaf carried $_c + $_s bytes"
        fi
    else
        carried "$1: client" "$2" "$size"
        carried "$1: server" "$2.srv" "$size"
    fi
}
for cs in AES128-SHA256 ECDHE-RSA-AES256-SHA384; do
    for etm in "" -no_etm; do
        what="TLS 1.2 $cs ${etm:-etm}"
        section "$what"
        sized "$big_mib"
        upload hwaf "up.$cs$etm" "$cs" "$etm"
        same "$what: $mib MiB client to server through hwaf" "$tmp/up.data" "$tmp/data"
        both_ends "$what upload" "up.$cs$etm"
        download hwaf "down.$cs$etm" "$cs" "$etm"
        same "$what: $mib MiB server to client through hwaf" "$tmp/down.data" "$tmp/data"
        both_ends "$what download" "down.$cs$etm"
        upload default "up.$cs$etm.ref" "$cs" "$etm"
        same "$what: reference upload" "$tmp/up.data" "$tmp/data"
        untouched "$what upload" "up.$cs$etm.ref.srv"
        works= test=">= 1"
        ! stitched "$cs" "$etm" || [ "$fails" -ne "$section_fails" ] ||
            works="yes, but default's stitched AES-128-CBC-HMAC-SHA256 carries the records" test="< 1"
        row "openssl s_client -> s_server, $cs, ${etm:-etm}, $mib MiB each way" "$ver" \
            "both ends" "up.$cs$etm" "up.$cs$etm.ref" "$size" "$test" "$works"
    done
done

# AES-GCM records: TLS 1.2 (libssl's record mode, tls1-aad and the explicit
# IV) and TLS 1.3 (AAD by update, the tag set before the data).
for cs in ECDHE-RSA-AES128-GCM-SHA256 TLS_AES_128_GCM_SHA256; do
    case $cs in TLS_*) what="TLS 1.3 $cs" ;; *) what="TLS 1.2 $cs" ;; esac
    section "$what"
    sized "$small_mib"
    upload hwaf "up.$cs" "$cs" ""
    same "$what: $mib MiB client to server through hwaf" "$tmp/up.data" "$tmp/data"
    carried "$what upload: client" "up.$cs" "$size"
    carried "$what upload: server" "up.$cs.srv" "$size"
    download hwaf "down.$cs" "$cs" ""
    same "$what: $mib MiB server to client through hwaf" "$tmp/down.data" "$tmp/data"
    carried "$what download: client" "down.$cs" "$size"
    carried "$what download: server" "down.$cs.srv" "$size"
    upload default "up.$cs.ref" "$cs" ""
    same "$what: reference upload" "$tmp/up.data" "$tmp/data"
    untouched "$what upload" "up.$cs.ref.srv"
    row "openssl s_client -> s_server, $cs, $mib MiB each way" "$ver" "both ends" \
        "up.$cs" "up.$cs.ref" "$size" ">= 1"
done

# policy = cpu on an engine (shipped mode, where AES-128-CBC's driver has a
# threshold: virtio-crypto): the threshold drops to 16384 bytes
# (docs/config.md), which the records of s_server -WWW reach (16 KiB of
# payload with the explicit IV and the padding: 16416 bytes per
# encryption and decryption) and those of s_client do not (it sends what
# it reads from stdin, 8 KiB at a time).  So the download goes through the
# engine at both ends, all but the last record, and the upload stays in
# software.  The HMAC's driver is a CPU driver: software either way.
if [ "$apps_mode" = shipped ] && [ "$(threshold AES-128-CBC)" != never ]; then
    cs=AES128-SHA256
    what="TLS 1.2 $cs etm, policy = cpu"
    section "$what"
    sized "$big_mib"
    cp "$tmp/sys/ssl/hwaf.cnf" "$tmp/hwaf.cnf.shipped"
    echo "policy = cpu" >>"$tmp/sys/ssl/hwaf.cnf" # (the file /etc/ssl/hwaf.cnf is)
    thresholds
    t=$(threshold AES-128-CBC)
    if [ "$t" = 16384 ]; then ok "$what: AES-128-CBC's threshold is 16384"; else bad "$what: AES-128-CBC's threshold is $t, not 16384"; fi
    download hwaf "down.cpu" "$cs" ""
    same "$what: $mib MiB server to client through hwaf" "$tmp/down.data" "$tmp/data"
    engine "$what download: server (16 KiB records)" "down.cpu.srv" $((size - 16384))
    engine "$what download: client (16 KiB records)" "down.cpu" $((size - 16384))
    download default "down.cpu.ref" "$cs" ""
    same "$what: reference download" "$tmp/down.data" "$tmp/data"
    untouched "$what download" "down.cpu.ref.srv"
    upload hwaf "up.cpu" "$cs" ""
    same "$what: $mib MiB client to server through hwaf" "$tmp/up.data" "$tmp/data"
    nokernel "$what upload: client (8 KiB records)" "up.cpu"
    nokernel "$what upload: server (8 KiB records)" "up.cpu.srv"
    carried "$what upload: client" "up.cpu" "$size"
    cp "$tmp/hwaf.cnf.shipped" "$tmp/sys/ssl/hwaf.cnf"
    thresholds
    row_figure=kernel # (the download's kernel bytes)
    row "openssl s_client <- s_server -WWW, $cs, etm, $mib MiB" "$ver" "both ends, policy = cpu" \
        "down.cpu" "down.cpu.ref" "$size" ">= 0.99" "" \
        "the records of 16 KiB through the engine, s_client's of 8 KiB (upload) in software"
    row_figure=
fi

section "curl"
sized "$small_mib"
rm -rf "$tmp/stats.curl.srv"; mkdir -p "$tmp/stats.curl.srv"
server hwaf curl.srv "$tmp/srv.out" -WWW -cipher AES128-SHA256
with hwaf curl curl -sS --cacert "$tmp/cert.pem" --tls-max 1.2 --ciphers AES128-SHA256 \
    -o "$tmp/curl.data" "https://localhost:$port/data" 2>"$tmp/cli.err" ||
    { bad "curl failed"; sed 's/^/      /' "$tmp/cli.err" | head; }
reap
same "curl: $mib MiB through hwaf" "$tmp/curl.data" "$tmp/data"
carried "curl: client" curl "$size" curl
carried "curl: server" curl.srv "$size"
server default curl.ref.srv "$tmp/srv.out" -WWW -cipher AES128-SHA256
with default curl.ref curl -sS --cacert "$tmp/cert.pem" --tls-max 1.2 --ciphers AES128-SHA256 \
    -o "$tmp/curl.data" "https://localhost:$port/data" 2>"$tmp/cli.err" || bad "reference curl failed"
reap
same "curl: reference" "$tmp/curl.data" "$tmp/data"
row "curl -> openssl s_server, AES128-SHA256, $mib MiB" "$curlver" "both ends" \
    curl curl.ref "$size" ">= 1"
finish

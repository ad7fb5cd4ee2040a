#!/bin/sh
# openvpn.sh: OpenVPN (2.6, 2.7) with hwaf.
#   --test-crypto (AES-128-CBC and AES-256-CBC with --auth SHA256, and
#   AES-256-GCM, OpenVPN 2.6's default data cipher) through the system's
#   openssl.cnf (lib.sh) and through `--providers hwaf default` with an
#   OPENSSL_CONF that only declares hwaf; OpenVPN checks every decrypted
#   packet itself and fails on a mismatch.  With CBC, forced, the kernel's
#   share of --auth SHA256 is checked apart (mac_bytes of HWAF_STATS).
#   A real tunnel (static key, UDP over a veth pair) between two network
#   namespaces, hwaf in both OpenVPN processes, moving a file over HTTP.
# Needs root (network namespaces).  HWAF_APPS_VPN_MIB sets the size of the
# file (default 2), HWAF_APPS_VPN_MTU the --tun-mtu of --test-crypto (which
# encrypts one packet of each size up to it).
. "$(dirname "$0")/lib.sh"
need openvpn ip python3 curl cmp
mtu=${HWAF_APPS_VPN_MTU:-400}
mib=${HWAF_APPS_VPN_MIB:-2}
size=$((mib * 1024 * 1024))
ver=$(openvpn --version | awk 'NR == 1 { print $2 }')
ip link set lo up 2>/dev/null
# --test-crypto encrypts and authenticates packets of each length up to
# about the MTU plus OpenVPN's own headroom: at least mtu*(mtu+1)/2 bytes
payload=$((mtu * (mtu + 1) / 2))
payload_mb=$(awk -v b=$((2 * payload)) 'BEGIN { printf "%.2f", b / 1e6 }') # the table's bound
openvpn --genkey secret "$tmp/static.key" >/dev/null 2>&1 || { bad "openvpn --genkey failed"; finish; }

tc() { # CNF LABEL CIPHER [ARGS]: openvpn --test-crypto
    _cnf=$1 _label=$2 _c=$3
    shift 3
    with "$_cnf" "$_label" openvpn --test-crypto --secret "$tmp/static.key" --cipher "$_c" \
        --auth SHA256 --tun-mtu "$mtu" --verb 1 "$@" >"$tmp/tc.log" 2>&1
    _rc=$?
    if [ $_rc -eq 0 ] && ! grep -qi "error\|fail" "$tmp/tc.log"; then
        ok "--test-crypto $_c ($_label): $mtu packet lengths intact"
    else
        bad "--test-crypto $_c ($_label) exit $_rc"
        sed 's/^/      /' "$tmp/tc.log" | tail -5
    fi
}
for c in AES-128-CBC AES-256-CBC AES-256-GCM; do
    section "--test-crypto $c, system-wide"
    tc hwaf "tc.$c" "$c"
    carried "--test-crypto $c (system-wide)" "tc.$c" "$((2 * payload))" openvpn
    case $apps_mode:$c in forced:*-CBC) # --auth SHA256: the HMAC share, apart from the cipher's
        _m=$(hwaf_sum "tc.$c" openvpn mac_bytes)
        if [ "$_m" -ge "$payload" ]; then
            ok "--test-crypto $c: HMAC-SHA256 of $_m bytes in the kernel (>= $payload)"
        else
            bad "--test-crypto $c: HMAC-SHA256 of $_m bytes in the kernel, expected >= $payload"
        fi ;;
    esac
    tc default "tc.$c.ref" "$c"
    untouched "--test-crypto $c" "tc.$c.ref"
    row "openvpn --test-crypto --cipher $c --auth SHA256 --tun-mtu $mtu" "$ver" "" \
        "tc.$c" "tc.$c.ref" 0 ">= $payload_mb"
    section "--test-crypto $c, --providers hwaf default"
    # an openssl.cnf that activates no provider: OpenVPN loads them, in
    # this order, hwaf with the keys the file declares for it
    tc providers "tc.$c.prov" "$c" --providers hwaf default
    carried "--test-crypto $c (--providers hwaf default)" "tc.$c.prov" "$((2 * payload))" openvpn
    row "openvpn --test-crypto --cipher $c --auth SHA256 --tun-mtu $mtu" "$ver" \
        "--providers hwaf default" "tc.$c.prov" "tc.$c.ref" 0 ">= $payload_mb"
done

# The tunnel: namespaces a and b joined by veth (10.99.0.1 - 10.99.0.2); the
# tunnel carries 10.98.0.1 - 10.98.0.2.  Nothing leaves the two namespaces.
ip netns add hwafa && ip netns add hwafb || { bad "cannot make network namespaces"; finish; }
on_exit 'ip netns pids hwafa 2>/dev/null | xargs -r kill 2>/dev/null; ip netns pids hwafb 2>/dev/null | xargs -r kill 2>/dev/null; ip netns del hwafa; ip netns del hwafb'
ip link add va netns hwafa type veth peer name vb netns hwafb &&
    ip -n hwafa addr add 10.99.0.1/24 dev va && ip -n hwafb addr add 10.99.0.2/24 dev vb &&
    ip -n hwafa link set va up && ip -n hwafb link set vb up &&
    ip -n hwafa link set lo up && ip -n hwafb link set lo up || { bad "cannot set up veth"; finish; }
mkdir -p "$tmp/www"
head -c "$size" /dev/urandom >"$tmp/www/data"

# OpenVPN 2.7 runs a tunnel without TLS (a static key) only when told so.
static_key=
openvpn --allow-deprecated-insecure-static-crypto --version >/dev/null 2>&1 &&
    static_key=--allow-deprecated-insecure-static-crypto
tunnel() { # CNF LABEL CIPHER: one tunnel, one transfer; sets $tmp/time.LABEL
    _cnf=$1 _label=$2 _c=$3
    for side in a b; do
        rm -rf "$tmp/stats.$_label.$side"; mkdir -p "$tmp/stats.$_label.$side"
        if [ $side = a ]; then l=10.99.0.1 r=10.99.0.2 ifc="10.98.0.1 10.98.0.2"
        else l=10.99.0.2 r=10.99.0.1 ifc="10.98.0.2 10.98.0.1"; fi
        ip netns exec hwaf$side env $(cnf_env "$_cnf") HWAF_STATS="$tmp/stats.$_label.$side" \
            openvpn --dev tun --ifconfig $ifc --secret "$tmp/static.key" $static_key --cipher "$_c" --auth SHA256 \
            --proto udp --local $l --remote $r --port 1194 --verb 3 >"$tmp/vpn.$side.log" 2>&1 &
        eval "vpn_$side=\$!"
    done
    _i=0
    until grep -q "Initialization Sequence Completed" "$tmp/vpn.a.log" &&
        grep -q "Initialization Sequence Completed" "$tmp/vpn.b.log"; do
        _i=$((_i + 1))
        [ $_i -lt 600 ] || { bad "$_label: the tunnel did not come up"; tail -5 "$tmp"/vpn.*.log; break; }
        sleep 0.1
    done
    ip netns exec hwafa python3 -m http.server --bind 10.98.0.1 --directory "$tmp/www" 8000 \
        >/dev/null 2>&1 &
    web=$!
    _i=0
    until ip netns exec hwafa ss -Hltn "sport = :8000" | grep -q .; do
        _i=$((_i + 1)); [ $_i -lt 300 ] || break; sleep 0.1
    done
    rm -f "$tmp/got"
    _t0=$(date +%s.%N)
    ip netns exec hwafb env OPENSSL_CONF="$tmp/default.cnf" curl -sS -o "$tmp/got" \
        http://10.98.0.1:8000/data || bad "$_label: curl through the tunnel failed"
    _t1=$(date +%s.%N)
    echo "$_t0 $_t1" | awk '{ printf "%.2f\n", $2 - $1 }' >"$tmp/time.$_label"
    kill $web $vpn_a $vpn_b
    wait $web $vpn_a $vpn_b 2>/dev/null
    same "$_label: $mib MiB through the $_c tunnel" "$tmp/got" "$tmp/www/data"
    # the records of both OpenVPN processes under one label, for the row
    mkdir -p "$tmp/stats.$_label"
    cp "$tmp/stats.$_label".a/* "$tmp/stats.$_label".b/* "$tmp/stats.$_label/" 2>/dev/null
}
section "tunnel"
tunnel hwaf vpn AES-256-CBC
carried "tunnel: sending end" vpn.a "$size" openvpn
carried "tunnel: receiving end" vpn.b "$size" openvpn
tunnel default vpn.ref AES-256-CBC
untouched "tunnel" vpn.ref
row "openvpn tunnel, static key, AES-256-CBC + SHA256, 2 namespaces, $mib MiB" "$ver" \
    "both ends" vpn vpn.ref "$size" ">= 2"
finish

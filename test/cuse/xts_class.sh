#!/bin/sh
# xts_class.sh WITH-DEVCRYPTO: AES-XTS over /dev/crypto is hardware only when
# the ecb(aes) driver its odd-sized and split units run on is hardware too.
# Two CUSE devices in turn (with-devcrypto --hw): one whose xts(aes) and
# cbc(aes) drivers report SIOP_FLAG_KERNEL_DRIVER_ONLY but whose ecb(aes)
# does not, then one where ecb(aes) does as well.  hwaf-info (HWAF_INFO, the
# module from HWAF_MODULE_DIR) must list AES-128/256-XTS over devcrypto as
# hw=no on the first (AES-CBC hw=yes: the flag reaches hwaf) and hw=yes on
# the second, both with an engine's request limit.  Exit 0 when all hold,
# 1 otherwise; without the CUSE device 77, or 1 with CI=true.
set -u
dc=${1:?usage: xts_class.sh WITH-DEVCRYPTO}
fail=0
bad() { echo "xts_class: FAIL: $*" >&2; fail=1; }
nodev() {
    echo "xts_class: needs the CUSE /dev/crypto of with-devcrypto ($*)" >&2
    [ "${CI:-}" = true ] && exit 1
    exit 77
}
[ -c /dev/crypto ] && nodev "a /dev/crypto already exists: its drivers cannot be told what to report"
check() { # HW-LIST XTS-CLASS
    out=$("$dc" --hw "$1" -- sh -c \
        '[ "$HWAF_DEVCRYPTO" = cuse ] || exit 3; OPENSSL_MODULES=$HWAF_MODULE_DIR "$HWAF_INFO" 2>&1')
    rc=$?
    [ $rc = 125 ] || [ $rc = 77 ] && nodev "with-devcrypto exit $rc"
    [ $rc = 0 ] || { bad "--hw $1: hwaf-info failed (exit $rc)"; echo "$out" >&2; return; }
    for a in AES-128-CBC AES-256-CBC; do
        echo "$out" | grep -Eq "^  $a devcrypto [^ ]+ hw=yes$" ||
            bad "--hw $1: $a not offered over devcrypto as hw=yes"
    done
    for a in AES-128-XTS AES-256-XTS; do
        echo "$out" | grep -Eq "^  $a devcrypto [^ ]+ hw=$2$" ||
            bad "--hw $1: $a not offered over devcrypto as hw=$2"
        other=$( [ $2 = yes ] && echo no || echo yes)
        echo "$out" | grep -Eq "^  $a devcrypto [^ ]+ hw=$other$" &&
            bad "--hw $1: $a offered over devcrypto as hw=$other"
        echo "$out" | grep -Eq "^  $a devcrypto [^ ]+ request_max=65536 " ||
            bad "--hw $1: $a over devcrypto without the engine's request limit"
    done
    [ $fail -eq 0 ] || echo "$out" >&2
}
check "cbc(aes),xts(aes)" no
check "cbc(aes),xts(aes),ecb(aes)" yes
[ $fail -eq 0 ] && echo "xts_class: ok"
exit $fail

#!/bin/sh
# wrong_answers.sh: /dev/crypto drivers that give wrong answers are not
# used.  Run under `with-devcrypto --wrong 'cbc(aes),ecb(aes)'`: the CUSE
# server flips the first byte of every such result.  hwaf-info (HWAF_INFO,
# the module from HWAF_MODULE_DIR) must list AES-CTR over devcrypto (the
# device works) but neither AES-CBC (its known answer fails) nor AES-XTS
# (the ecb(aes) sessions that ciphertext stealing and split units use fail
# FIPS-197's known answer, though the xts(aes) session itself is right),
# while AF_ALG still offers all three.  Exit 0 when all hold, 1 otherwise;
# without the CUSE device 77, or 1 with CI=true.
set -u
fail=0
bad() { echo "wrong_answers: FAIL: $*" >&2; fail=1; }
if [ "${HWAF_DEVCRYPTO:-}" != cuse ]; then
    echo "wrong_answers: needs the CUSE /dev/crypto of with-devcrypto" \
        "(HWAF_DEVCRYPTO=${HWAF_DEVCRYPTO:-unset})" >&2
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
out=$(OPENSSL_MODULES=$HWAF_MODULE_DIR "$HWAF_INFO" 2>&1) || bad "hwaf-info failed"
has() { echo "$out" | grep -q "^  $1 $2 "; }
for a in AES-128-CTR AES-256-CTR; do
    has $a devcrypto || bad "$a not offered over devcrypto"
done
for a in AES-128-CBC AES-256-CBC AES-128-XTS AES-256-XTS; do
    has $a devcrypto && bad "$a offered over devcrypto, whose driver gives wrong answers"
    has $a afalg || bad "$a not offered over afalg"
done
[ $fail -eq 0 ] || echo "$out" >&2
[ $fail -eq 0 ] && echo "wrong_answers: ok"
exit $fail

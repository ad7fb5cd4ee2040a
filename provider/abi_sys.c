/*
 * The kernel ABIs hwaf speaks, checked at compile time on every target:
 * the cryptodev-linux structs and ioctl numbers of cryptodev_abi.h (hwaf
 * carries its own copy of that header) and the AF_ALG control messages
 * and socket address of <linux/if_alg.h>.
 *
 * The expected figures are the module's own layout for the two data
 * models Linux has: LP64 (x86-64, arm64) and ILP32 (armhf, i386).  A
 * 32-bit process on a 64-bit kernel gets the same ILP32 layout (the
 * cryptodev module and the socket layer convert compat structs), so these
 * are also what that kernel expects.  No code here: the object is empty.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <linux/if_alg.h>

#include "cryptodev_abi.h"

#define ABI(cond, what) _Static_assert(cond, what)

#if UINTPTR_MAX == UINT64_MAX
#define P64 1 /* LP64 */
#elif UINTPTR_MAX == UINT32_MAX
#define P64 0 /* ILP32 */
#else
#error "hwaf: a data model other than LP64 or ILP32"
#endif

/* Offsets: (LP64, ILP32). */
#define AT(lp64, ilp32) (P64 ? (lp64) : (ilp32))

/* struct session_op (CIOCGSESSION) */
ABI(offsetof(struct session_op, cipher) == 0, "session_op.cipher");
ABI(offsetof(struct session_op, mac) == 4, "session_op.mac");
ABI(offsetof(struct session_op, keylen) == 8, "session_op.keylen");
ABI(offsetof(struct session_op, key) == AT(16, 12), "session_op.key");
ABI(offsetof(struct session_op, mackeylen) == AT(24, 16), "session_op.mackeylen");
ABI(offsetof(struct session_op, mackey) == AT(32, 20), "session_op.mackey");
ABI(offsetof(struct session_op, ses) == AT(40, 24), "session_op.ses");
ABI(sizeof(struct session_op) == AT(48, 28), "session_op size");

/* struct session_info_op (CIOCGSESSINFO): no pointers, same on both. */
ABI(sizeof(struct alg_info) == 2 * CRYPTODEV_MAX_ALG_NAME, "alg_info size");
ABI(offsetof(struct session_info_op, cipher_info) == 4, "session_info_op.cipher_info");
ABI(offsetof(struct session_info_op, hash_info) == 132, "session_info_op.hash_info");
ABI(offsetof(struct session_info_op, alignmask) == 260, "session_info_op.alignmask");
ABI(offsetof(struct session_info_op, flags) == 264, "session_info_op.flags");
ABI(sizeof(struct session_info_op) == 268, "session_info_op size");

/* struct crypt_op (CIOCCRYPT) */
ABI(offsetof(struct crypt_op, ses) == 0, "crypt_op.ses");
ABI(offsetof(struct crypt_op, op) == 4, "crypt_op.op");
ABI(offsetof(struct crypt_op, flags) == 6, "crypt_op.flags");
ABI(offsetof(struct crypt_op, len) == 8, "crypt_op.len");
ABI(offsetof(struct crypt_op, src) == AT(16, 12), "crypt_op.src");
ABI(offsetof(struct crypt_op, dst) == AT(24, 16), "crypt_op.dst");
ABI(offsetof(struct crypt_op, mac) == AT(32, 20), "crypt_op.mac");
ABI(offsetof(struct crypt_op, iv) == AT(40, 24), "crypt_op.iv");
ABI(sizeof(struct crypt_op) == AT(48, 28), "crypt_op size");

/* struct crypt_auth_op (CIOCAUTHCRYPT) */
ABI(offsetof(struct crypt_auth_op, len) == 8, "crypt_auth_op.len");
ABI(offsetof(struct crypt_auth_op, auth_len) == 12, "crypt_auth_op.auth_len");
ABI(offsetof(struct crypt_auth_op, auth_src) == 16, "crypt_auth_op.auth_src");
ABI(offsetof(struct crypt_auth_op, src) == AT(24, 20), "crypt_auth_op.src");
ABI(offsetof(struct crypt_auth_op, dst) == AT(32, 24), "crypt_auth_op.dst");
ABI(offsetof(struct crypt_auth_op, tag) == AT(40, 28), "crypt_auth_op.tag");
ABI(offsetof(struct crypt_auth_op, tag_len) == AT(48, 32), "crypt_auth_op.tag_len");
ABI(offsetof(struct crypt_auth_op, iv) == AT(56, 36), "crypt_auth_op.iv");
ABI(offsetof(struct crypt_auth_op, iv_len) == AT(64, 40), "crypt_auth_op.iv_len");
ABI(sizeof(struct crypt_auth_op) == AT(72, 44), "crypt_auth_op size");

/* struct cphash_op (CIOCCPHASH) */
ABI(sizeof(struct cphash_op) == 8, "cphash_op size");

/* The ioctl numbers carry the struct sizes (asm-generic encoding, which
 * x86 and ARM share). */
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__)
ABI(CRIOGET == 0xc0046365u, "CRIOGET number");
ABI(CIOCGSESSION == AT(0xc0306366u, 0xc01c6366u), "CIOCGSESSION number");
ABI(CIOCFSESSION == 0x40046367u, "CIOCFSESSION number");
ABI(CIOCCRYPT == AT(0xc0306368u, 0xc01c6368u), "CIOCCRYPT number");
ABI(CIOCGSESSINFO == 0xc10c636bu, "CIOCGSESSINFO number");
ABI(CIOCCPHASH == 0x40086370u, "CIOCCPHASH number");
ABI(CIOCAUTHCRYPT == AT(0xc048636du, 0xc02c636du), "CIOCAUTHCRYPT number");
#endif

/* AF_ALG: the socket address, the IV control message, option numbers. */
ABI(sizeof(struct sockaddr_alg) == 88, "sockaddr_alg size");
ABI(offsetof(struct sockaddr_alg, salg_name) == 24, "sockaddr_alg.salg_name");
ABI(sizeof(struct af_alg_iv) == 4, "af_alg_iv size");
ABI(offsetof(struct af_alg_iv, iv) == 4, "af_alg_iv.iv");
ABI(sizeof(struct cmsghdr) == AT(16, 12), "cmsghdr size");
ABI(CMSG_LEN(sizeof(struct af_alg_iv) + 16) == AT(16, 12) + 20, "IV control message length");
ABI(CMSG_SPACE(sizeof(struct af_alg_iv) + 16) == AT(40, 32), "IV control message space");
ABI(CMSG_SPACE(sizeof(uint32_t)) == AT(24, 16), "operation control message space");
ABI(SOL_ALG == 279, "SOL_ALG");
ABI(ALG_SET_KEY == 1 && ALG_SET_IV == 2 && ALG_SET_OP == 3, "ALG_SET_* numbers");
ABI(ALG_SET_AEAD_ASSOCLEN == 4 && ALG_SET_AEAD_AUTHSIZE == 5, "ALG_SET_AEAD_* numbers");
ABI(ALG_OP_DECRYPT == 0 && ALG_OP_ENCRYPT == 1, "ALG_OP_* numbers");

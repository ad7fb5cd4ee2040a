/*
 * hwaf's error library: reason codes with strings, raised through the
 * core's error upcalls so that they carry the provider's name.
 */
#ifndef HWAF_ERR_H
#define HWAF_ERR_H

#include <openssl/core.h>

struct hwaf_prov_st;

/* Reason codes.  Keep hwaf_reason_strings[] in hwaf_err.c in step. */
enum {
    HWAF_R_NO_KEY_SET = 1,
    HWAF_R_INVALID_KEY_LENGTH,
    HWAF_R_INVALID_IV_LENGTH,
    HWAF_R_XTS_DUPLICATED_KEYS,
    HWAF_R_XTS_DATA_UNIT_TOO_SMALL,
    HWAF_R_XTS_DATA_UNIT_TOO_LARGE,
    HWAF_R_UPDATE_AFTER_FINAL,
    HWAF_R_OUTPUT_BUFFER_TOO_SMALL,
    HWAF_R_WRONG_FINAL_BLOCK_LENGTH,
    HWAF_R_BAD_DECRYPT,
    HWAF_R_INVALID_PARAMETER,
    HWAF_R_BACKEND_UNAVAILABLE,
    HWAF_R_KERNEL_OPERATION_FAILED,
    HWAF_R_KERNEL_SHORT_OUTPUT,
    HWAF_R_INVALID_CONFIG,
    HWAF_R_FORK_RECOVERY_FAILED,
    HWAF_R_MALLOC_FAILURE,
    HWAF_R_NOT_INITIALISED,
    HWAF_R_NOT_SUPPORTED,
    HWAF_R_FAILED_TO_SET_PARAMETER,
    HWAF_R_TAG_MISMATCH,
    HWAF_R_INVALID_TAG,
    HWAF_R_AEAD_MESSAGE_TOO_LARGE,
    HWAF_R_AAD_AFTER_DATA,
    HWAF_R_NO_DIGEST_SET,
    HWAF_R_DIGEST_NOT_OFFERED,
    HWAF_R_SANDBOXED,
    HWAF_R_SOFTWARE_PATH_FAILED,
    HWAF_R_KNOWN_ANSWER_FAILED,
    HWAF_R_CALIBRATION_NOT_REGULAR_FILE,
    HWAF_R_CALIBRATION_EMPTY,
    HWAF_R_CALIBRATION_NUL_BYTE,
    HWAF_R_CALIBRATION_SECOND_LINE,
    HWAF_R_LAST
};

extern const OSSL_ITEM hwaf_reason_strings[];
/* The string of reason code r ("" when none), for a text that names it:
 * an error while the provider loads goes out with OpenSSL's reason, since
 * the core takes hwaf's strings only after a load that succeeded
 * (hwaf_config.c), and its text carries hwaf's reason instead. */
const char *hwaf_reason_text(int r);

/* Called once from OSSL_provider_init with the core's dispatch table. */
void hwaf_err_init(const OSSL_DISPATCH *in);

void hwaf_raise(const struct hwaf_prov_st *prov, const char *file, int line,
                const char *func, int reason, const char *fmt, ...);
/* A failed system call: errno value err is attached as text. */
void hwaf_raise_sys(const struct hwaf_prov_st *prov, const char *file, int line,
                    const char *func, int reason, int err, const char *call);

/*
 * Error marks through the core: hwaf_err_mark() sets one (0 when the core
 * offers none: then nothing may be popped); hwaf_err_mark_drop() then
 * either pops the errors raised since (pop = 1) or keeps them and removes
 * only the mark.
 */
int hwaf_err_mark(const struct hwaf_prov_st *prov);
void hwaf_err_mark_drop(const struct hwaf_prov_st *prov, int pop);

#define HWAF_RAISE(prov, reason, ...) \
    hwaf_raise((prov), OPENSSL_FILE, OPENSSL_LINE, OPENSSL_FUNC, (reason), __VA_ARGS__)
#define HWAF_RAISE_SYS(prov, reason, err, call) \
    hwaf_raise_sys((prov), OPENSSL_FILE, OPENSSL_LINE, OPENSSL_FUNC, (reason), (err), (call))

#endif

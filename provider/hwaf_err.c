/* hwaf's error library: reason strings and the core's error upcalls. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <openssl/core_dispatch.h>
#include "hwaf_err.h"
#include "hwaf_local.h"

const OSSL_ITEM hwaf_reason_strings[] = {
    { HWAF_R_NO_KEY_SET, "no key set" },
    { HWAF_R_INVALID_KEY_LENGTH, "invalid key length" },
    { HWAF_R_INVALID_IV_LENGTH, "invalid iv length" },
    { HWAF_R_XTS_DUPLICATED_KEYS, "xts key halves are equal" },
    { HWAF_R_XTS_DATA_UNIT_TOO_SMALL, "xts data unit shorter than one block" },
    { HWAF_R_XTS_DATA_UNIT_TOO_LARGE, "xts data unit too large" },
    { HWAF_R_UPDATE_AFTER_FINAL, "update after final" },
    { HWAF_R_OUTPUT_BUFFER_TOO_SMALL, "output buffer too small" },
    { HWAF_R_WRONG_FINAL_BLOCK_LENGTH, "wrong final block length" },
    { HWAF_R_BAD_DECRYPT, "bad decrypt" },
    { HWAF_R_INVALID_PARAMETER, "invalid parameter" },
    { HWAF_R_BACKEND_UNAVAILABLE, "backend unavailable" },
    { HWAF_R_KERNEL_OPERATION_FAILED, "kernel crypto operation failed" },
    { HWAF_R_KERNEL_SHORT_OUTPUT, "kernel returned fewer bytes than asked" },
    { HWAF_R_INVALID_CONFIG, "invalid configuration" },
    { HWAF_R_FORK_RECOVERY_FAILED, "could not recover kernel state after fork" },
    { HWAF_R_MALLOC_FAILURE, "out of memory" },
    { HWAF_R_NOT_INITIALISED, "operation not initialised" },
    { HWAF_R_NOT_SUPPORTED, "not supported" },
    { HWAF_R_FAILED_TO_SET_PARAMETER, "failed to set parameter" },
    { HWAF_R_TAG_MISMATCH, "authentication tag mismatch" },
    { HWAF_R_INVALID_TAG, "invalid tag" },
    { HWAF_R_AEAD_MESSAGE_TOO_LARGE, "aead message larger than one kernel request" },
    { HWAF_R_AAD_AFTER_DATA, "aad given after data" },
    { HWAF_R_NO_DIGEST_SET, "no digest set" },
    { HWAF_R_DIGEST_NOT_OFFERED, "digest not offered by hwaf for this mac" },
    { HWAF_R_SANDBOXED, "a seccomp filter installed after hwaf loaded forbids kernel crypto calls" },
    { HWAF_R_SOFTWARE_PATH_FAILED, "software path (OpenSSL default provider) failed" },
    { HWAF_R_KNOWN_ANSWER_FAILED, "kernel driver failed its known answer" },
    { HWAF_R_CALIBRATION_NOT_REGULAR_FILE, "calibration file is not a regular file" },
    { HWAF_R_CALIBRATION_EMPTY, "calibration file is empty" },
    { HWAF_R_CALIBRATION_NUL_BYTE, "NUL byte in the calibration file" },
    { HWAF_R_CALIBRATION_SECOND_LINE,
      "second line for the same entry in the calibration file" },
    { 0, NULL }
};

const char *hwaf_reason_text(int r)
{
    const OSSL_ITEM *i;

    for (i = hwaf_reason_strings; i->ptr != NULL; i++)
        if (i->id == (unsigned int)r)
            return i->ptr;
    return "";
}

static OSSL_FUNC_core_new_error_fn *c_new_error;
static OSSL_FUNC_core_set_error_debug_fn *c_set_error_debug;
static OSSL_FUNC_core_vset_error_fn *c_vset_error;
static OSSL_FUNC_core_set_error_mark_fn *c_set_error_mark;
static OSSL_FUNC_core_clear_last_error_mark_fn *c_clear_last_error_mark;
static OSSL_FUNC_core_pop_error_to_mark_fn *c_pop_error_to_mark;

void hwaf_err_init(const OSSL_DISPATCH *in)
{
    for (; in->function_id != 0; in++) {
        switch (in->function_id) {
        case OSSL_FUNC_CORE_NEW_ERROR:
            c_new_error = OSSL_FUNC_core_new_error(in);
            break;
        case OSSL_FUNC_CORE_SET_ERROR_DEBUG:
            c_set_error_debug = OSSL_FUNC_core_set_error_debug(in);
            break;
        case OSSL_FUNC_CORE_VSET_ERROR:
            c_vset_error = OSSL_FUNC_core_vset_error(in);
            break;
        case OSSL_FUNC_CORE_SET_ERROR_MARK:
            c_set_error_mark = OSSL_FUNC_core_set_error_mark(in);
            break;
        case OSSL_FUNC_CORE_CLEAR_LAST_ERROR_MARK:
            c_clear_last_error_mark = OSSL_FUNC_core_clear_last_error_mark(in);
            break;
        case OSSL_FUNC_CORE_POP_ERROR_TO_MARK:
            c_pop_error_to_mark = OSSL_FUNC_core_pop_error_to_mark(in);
            break;
        default:
            break;
        }
    }
}

static void vraise(const hwaf_prov *prov, const char *file, int line,
                   const char *func, int reason, const char *fmt, va_list ap)
{
    if (prov == NULL || c_new_error == NULL || c_vset_error == NULL)
        return;
    c_new_error(prov->handle);
    if (c_set_error_debug != NULL)
        c_set_error_debug(prov->handle, file, line, func);
    c_vset_error(prov->handle, (uint32_t)reason, fmt, ap);
}

void hwaf_raise(const hwaf_prov *prov, const char *file, int line,
                const char *func, int reason, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vraise(prov, file, line, func, reason, fmt, ap);
    va_end(ap);
}

static void raise_fmt(const hwaf_prov *prov, const char *file, int line,
                      const char *func, int reason, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vraise(prov, file, line, func, reason, fmt, ap);
    va_end(ap);
}

void hwaf_raise_sys(const hwaf_prov *prov, const char *file, int line,
                    const char *func, int reason, int err, const char *call)
{
    char buf[128];
    const char *msg = buf;

    /* GNU strerror_r may return a static string instead of filling buf. */
    msg = strerror_r(err, buf, sizeof(buf));
    raise_fmt(prov, file, line, func, reason, "%s: %s (errno %d)", call, msg, err);
}

int hwaf_err_mark(const hwaf_prov *prov)
{
    if (prov == NULL || c_set_error_mark == NULL || c_pop_error_to_mark == NULL
        || c_clear_last_error_mark == NULL)
        return 0;
    /* 0 when the queue is empty and there is nothing to mark: popping then
     * empties it again, which is as good as a mark. */
    (void)c_set_error_mark(prov->handle);
    return 1;
}

void hwaf_err_mark_drop(const hwaf_prov *prov, int pop)
{
    if (pop)
        c_pop_error_to_mark(prov->handle);
    else
        c_clear_last_error_mark(prov->handle);
}

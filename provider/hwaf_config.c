/*
 * The provider's configuration: the keys of its openssl.cnf section, read
 * in one table-driven pass through the core, validated strictly, logged.
 * docs/config.md documents every key.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_dispatch.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/proverr.h>
#include "hwaf_local.h"
#include "hwaf_err.h"
#include "hwaf_debug.h"
#include "hwaf_sys.h"

enum { CFG_BACKENDS, CFG_PREFER, CFG_ALLOW_SOFTWARE, CFG_HW_DRIVERS,
       CFG_SW_DRIVERS, CFG_DEBUG, CFG_ZEROCOPY, CFG_ZEROCOPY_MIN, CFG_POLICY,
       CFG_OFFLOAD_MIN, CFG_CALIBRATION, CFG_REQUEST_MAX, CFG_KNOWN_ANSWERS, CFG_COUNT };

static const char *const cfg_names[CFG_COUNT] = {
    [CFG_BACKENDS] = "backends",
    [CFG_PREFER] = "prefer",
    [CFG_ALLOW_SOFTWARE] = "allow_software",
    [CFG_HW_DRIVERS] = "hw_drivers",
    [CFG_SW_DRIVERS] = "sw_drivers",
    [CFG_DEBUG] = "debug",
    [CFG_ZEROCOPY] = "zerocopy",
    [CFG_ZEROCOPY_MIN] = "zerocopy_min",
    [CFG_POLICY] = "policy",
    [CFG_OFFLOAD_MIN] = "offload_min",
    [CFG_CALIBRATION] = "calibration",
    [CFG_REQUEST_MAX] = "request_max",
    [CFG_KNOWN_ANSWERS] = "known_answers",
};

/* Used for offload_min when the section does not set it (docs/config.md). */
#define OFFLOAD_MIN_ENV "HWAF_OFFLOAD_MIN"

#define ZEROCOPY_MIN_DEFAULT (64 * 1024)

/* request_max: bytes from a page to 1 GiB, whole pages. */
#define REQUEST_MAX_MIN 4096ull
#define REQUEST_MAX_MAX (1ull << 30)

static const char *const be_names[HWAF_BE_COUNT] = {
    [HWAF_BE_AFALG] = "afalg",
    [HWAF_BE_DEVCRYPTO] = "devcrypto",
};

/*
 * A bad value makes the provider refuse to load.  The error is raised with
 * OpenSSL's own reason (our strings are not loaded yet) and also printed:
 * when the provider is activated from openssl.cnf, OpenSSL 3.0 drops the
 * errors of a failed activation, and a silently absent provider is exactly
 * what a bad value must not cause.
 */
static void config_error(hwaf_prov *prov, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    HWAF_RAISE(prov, (int)ERR_PACK(ERR_LIB_PROV, 0, PROV_R_INVALID_CONFIG_DATA), "%s", msg);
    fprintf(stderr, "%s; the hwaf provider is not loaded\n", msg);
}

#define CONFIG_ERROR config_error

static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = { "yes", "true", "on", "1" };
    static const char *const no[] = { "no", "false", "off", "0" };
    size_t i;

    for (i = 0; i < 4; i++) {
        if (OPENSSL_strcasecmp(v, yes[i]) == 0) {
            *out = 1;
            return 1;
        }
        if (OPENSSL_strcasecmp(v, no[i]) == 0) {
            *out = 0;
            return 1;
        }
    }
    return 0;
}

/*
 * " a b c ": words separated by spaces or commas, normalised.  A comma
 * inside parentheses belongs to the word: a kernel driver can be named
 * after a template instance, "gcm_base(ctr-aes-ce,cryptd(ghash-ce-sync))"
 * (gcm(aes) on armhf 6.1).
 */
static char *normalise_list(const char *v)
{
    size_t len = strlen(v), i, o = 0;
    char *out = OPENSSL_malloc(len + 3);
    int sep = 1, depth = 0;

    if (out == NULL)
        return NULL;
    out[o++] = ' ';
    for (i = 0; i < len; i++) {
        if (v[i] == '(')
            depth++;
        else if (v[i] == ')' && depth > 0)
            depth--;
        if (isspace((unsigned char)v[i]) || (v[i] == ',' && depth == 0)) {
            if (!sep)
                out[o++] = ' ';
            sep = 1;
        } else {
            out[o++] = v[i];
            sep = 0;
        }
    }
    if (!sep)
        out[o++] = ' ';
    out[o] = '\0';
    return out;
}

int hwaf_config_list_has(const char *list, const char *name)
{
    size_t nl = strlen(name);
    const char *p = list;

    if (list == NULL || nl == 0)
        return 0;
    while ((p = strstr(p, name)) != NULL) {
        if (p[-1] == ' ' && p[nl] == ' ')
            return 1;
        p += nl;
    }
    return 0;
}

/*
 * One value of request_max: "auto" (-1: the backend's own limit),
 * "unlimited" (0) or a number of bytes.  1 when valid.
 */
static int parse_request_max(const char *v, size_t n, long long *out)
{
    char buf[32], *end;
    unsigned long long b;

    if (n == 0 || n >= sizeof(buf))
        return 0;
    memcpy(buf, v, n);
    buf[n] = '\0';
    if (strcmp(buf, "auto") == 0) {
        *out = -1;
        return 1;
    }
    if (strcmp(buf, "unlimited") == 0) {
        *out = 0;
        return 1;
    }
    b = strtoull(buf, &end, 10);
    if (buf[0] < '0' || buf[0] > '9' || *end != '\0' || b < REQUEST_MAX_MIN
        || b > REQUEST_MAX_MAX || b % REQUEST_MAX_MIN != 0)
        return 0;
    *out = (long long)b;
    return 1;
}

/*
 * request_max's words (normalised " a b "): at most one bare value, for
 * every driver, and driver=value pairs, each driver once.  1 when valid,
 * else 0 with a sentence in err.
 */
static int check_request_max(const char *list, char *err, size_t errlen)
{
    const char *w = list;
    int bare = 0;
    long long v;

    while (*w == ' ')
        w++;
    while (*w != '\0') {
        size_t n = strcspn(w, " ");
        const char *eq = memchr(w, '=', n);

        if (eq == NULL) {
            if (bare++ || !parse_request_max(w, n, &v)) {
                snprintf(err, errlen, "\"%.*s\": %s", (int)n, w, bare > 1
                         ? "more than one value for every driver"
                         : "expected auto, unlimited, or bytes from 4096 to 1073741824 "
                           "in whole 4096-byte pages");
                return 0;
            }
        } else {
            char name[HWAF_DRIVER_NAME_MAX + 3];
            size_t nl = (size_t)(eq - w);

            if (nl == 0 || nl >= HWAF_DRIVER_NAME_MAX
                || !parse_request_max(eq + 1, n - nl - 1, &v)) {
                snprintf(err, errlen, "\"%.*s\": expected driver=value with a value of "
                         "auto, unlimited, or bytes from 4096 to 1073741824 in whole "
                         "4096-byte pages", (int)n, w);
                return 0;
            }
            /* " name=" must not come again later. */
            snprintf(name, sizeof(name), " %.*s=", (int)nl, w);
            if (strstr(w + n, name) != NULL) {
                snprintf(err, errlen, "driver %.*s named twice", (int)nl, w);
                return 0;
            }
        }
        w += n;
        while (*w == ' ')
            w++;
    }
    return 1;
}

size_t hwaf_request_max(const hwaf_config *cfg, const hwaf_driver *drv, int *src)
{
    const char *w = cfg->request_max, *all = NULL;
    size_t dn = strlen(drv->name), allen = 0;
    long long v = -1;

    *src = HWAF_SRC_DEFAULT;
    if (w == NULL)
        return drv->req_max;
    while (*w == ' ')
        w++;
    while (*w != '\0') {
        size_t n = strcspn(w, " ");
        const char *eq = memchr(w, '=', n);

        if (eq == NULL) {
            all = w;
            allen = n;
        } else if ((size_t)(eq - w) == dn && strncmp(w, drv->name, dn) == 0
                   && parse_request_max(eq + 1, n - dn - 1, &v)) {
            break;
        }
        w += n;
        while (*w == ' ')
            w++;
    }
    if (*w == '\0' && (all == NULL || !parse_request_max(all, allen, &v)))
        return drv->req_max;
    if (v < 0)
        return drv->req_max;   /* auto */
    *src = HWAF_SRC_CONFIGURED;
    return (size_t)v;
}

int hwaf_config_load(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                     hwaf_prov *prov, hwaf_config *cfg)
{
    OSSL_FUNC_core_get_params_fn *get_params = NULL;
    const char *val[CFG_COUNT] = { NULL };
    OSSL_PARAM params[CFG_COUNT + 1];
    int i;

    memset(cfg, 0, sizeof(*cfg));
    for (i = 0; i < HWAF_BE_COUNT; i++)
        cfg->use_backend[i] = 1;
    cfg->prefer = -1;
    cfg->allow_software = 1;
    cfg->zerocopy = -1;
    cfg->zerocopy_min = ZEROCOPY_MIN_DEFAULT;
    cfg->policy = HWAF_POLICY_THROUGHPUT;
    cfg->offload_auto = 1;

    for (; in->function_id != 0; in++)
        if (in->function_id == OSSL_FUNC_CORE_GET_PARAMS)
            get_params = OSSL_FUNC_core_get_params(in);
    if (get_params != NULL) {
        for (i = 0; i < CFG_COUNT; i++)
            params[i] = OSSL_PARAM_construct_utf8_ptr(cfg_names[i], (char **)&val[i], 0);
        params[CFG_COUNT] = OSSL_PARAM_construct_end();
        if (!get_params(handle, params)) {
            CONFIG_ERROR(prov, "hwaf: could not read the provider's configuration");
            return 0;
        }
    }

    if (val[CFG_DEBUG] != NULL) {
        if (!parse_bool(val[CFG_DEBUG], &cfg->debug)) {
            CONFIG_ERROR(prov, "hwaf: debug = \"%s\": expected yes or no", val[CFG_DEBUG]);
            return 0;
        }
        if (cfg->debug)
            hwaf_debug_enable();
    }
    if (val[CFG_BACKENDS] != NULL) {
        char *list = normalise_list(val[CFG_BACKENDS]);
        char *w, *save = NULL;

        if (list == NULL)
            return 0;
        /* An empty list would silently disable every backend. */
        if (strcmp(list, " ") == 0) {
            CONFIG_ERROR(prov, "hwaf: backends = \"%s\": expected one or more of "
                         "afalg devcrypto (leave the key out for both)", val[CFG_BACKENDS]);
            OPENSSL_free(list);
            return 0;
        }
        for (i = 0; i < HWAF_BE_COUNT; i++)
            cfg->use_backend[i] = 0;
        for (w = strtok_r(list, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
            for (i = 0; i < HWAF_BE_COUNT; i++)
                if (strcmp(w, be_names[i]) == 0)
                    break;
            if (i == HWAF_BE_COUNT) {
                CONFIG_ERROR(prov, "hwaf: backends: unknown backend \"%s\" "
                             "(known: afalg devcrypto)", w);
                OPENSSL_free(list);
                return 0;
            }
            cfg->use_backend[i] = 1;
        }
        OPENSSL_free(list);
    }
    if (val[CFG_PREFER] != NULL) {
        if (strcmp(val[CFG_PREFER], "auto") == 0) {
            cfg->prefer = -1;
        } else {
            for (i = 0; i < HWAF_BE_COUNT; i++)
                if (strcmp(val[CFG_PREFER], be_names[i]) == 0)
                    break;
            if (i == HWAF_BE_COUNT) {
                CONFIG_ERROR(prov, "hwaf: prefer = \"%s\": expected auto, afalg or devcrypto",
                             val[CFG_PREFER]);
                return 0;
            }
            cfg->prefer = i;
        }
    }
    if (val[CFG_ALLOW_SOFTWARE] != NULL
        && !parse_bool(val[CFG_ALLOW_SOFTWARE], &cfg->allow_software)) {
        CONFIG_ERROR(prov, "hwaf: allow_software = \"%s\": expected yes or no",
                     val[CFG_ALLOW_SOFTWARE]);
        return 0;
    }
    if (val[CFG_ZEROCOPY] != NULL && strcmp(val[CFG_ZEROCOPY], "auto") != 0
        && !parse_bool(val[CFG_ZEROCOPY], &cfg->zerocopy)) {
        CONFIG_ERROR(prov, "hwaf: zerocopy = \"%s\": expected auto, yes or no",
                     val[CFG_ZEROCOPY]);
        return 0;
    }
    if (val[CFG_ZEROCOPY_MIN] != NULL) {
        char *end;
        unsigned long long v = strtoull(val[CFG_ZEROCOPY_MIN], &end, 10);

        if (end == val[CFG_ZEROCOPY_MIN] || *end != '\0' || val[CFG_ZEROCOPY_MIN][0] == '-'
            || v < 4096 || v > (1ull << 30)) {
            CONFIG_ERROR(prov, "hwaf: zerocopy_min = \"%s\": expected a number of bytes "
                         "from 4096 to 1073741824", val[CFG_ZEROCOPY_MIN]);
            return 0;
        }
        cfg->zerocopy_min = (size_t)v;
    }
    if (val[CFG_KNOWN_ANSWERS] != NULL) {
        if (strcmp(val[CFG_KNOWN_ANSWERS], "first_use") == 0) {
            cfg->known_answers = HWAF_KAT_AT_FIRST_USE;
        } else if (strcmp(val[CFG_KNOWN_ANSWERS], "load") == 0) {
            cfg->known_answers = HWAF_KAT_AT_LOAD;
        } else {
            CONFIG_ERROR(prov, "hwaf: known_answers = \"%s\": expected first_use or load",
                         val[CFG_KNOWN_ANSWERS]);
            return 0;
        }
    }
    if (val[CFG_POLICY] != NULL) {
        if (strcmp(val[CFG_POLICY], "throughput") == 0) {
            cfg->policy = HWAF_POLICY_THROUGHPUT;
        } else if (strcmp(val[CFG_POLICY], "cpu") == 0) {
            cfg->policy = HWAF_POLICY_CPU;
        } else {
            CONFIG_ERROR(prov, "hwaf: policy = \"%s\": expected throughput or cpu",
                         val[CFG_POLICY]);
            return 0;
        }
    }
    {
        const char *v = val[CFG_OFFLOAD_MIN], *what = "offload_min";

        if (v == NULL && (v = hwaf_sys_getenv(OFFLOAD_MIN_ENV)) != NULL)
            what = OFFLOAD_MIN_ENV;
        if (v != NULL && strcmp(v, "auto") != 0) {
            char *end;
            unsigned long long n = strtoull(v, &end, 10);

            cfg->offload_auto = 0;
            if (strcmp(v, "never") == 0) {
                cfg->offload_min = SIZE_MAX;
            } else if (end == v || *end != '\0' || v[0] < '0' || v[0] > '9'
                       || n > HWAF_OFFLOAD_MIN_MAX) {
                CONFIG_ERROR(prov, "hwaf: %s = \"%s\": expected auto, never or a number "
                             "of bytes from 0 to %llu", what, v, HWAF_OFFLOAD_MIN_MAX);
                return 0;
            } else {
                cfg->offload_min = (size_t)n;
            }
        }
    }
    if (val[CFG_CALIBRATION] != NULL) {
        char err[600];

        if (val[CFG_CALIBRATION][0] == '\0') {
            CONFIG_ERROR(prov, "hwaf: calibration: expected a file name");
            return 0;
        }
        if ((cfg->calibration = OPENSSL_strdup(val[CFG_CALIBRATION])) == NULL)
            return 0;
        if (!hwaf_calib_load(cfg->calibration, &cfg->calib, err, sizeof(err))) {
            CONFIG_ERROR(prov, "hwaf: calibration: %s", err);
            return 0;
        }
    }
    if (val[CFG_REQUEST_MAX] != NULL) {
        char err[400];

        if ((cfg->request_max = normalise_list(val[CFG_REQUEST_MAX])) == NULL)
            return 0;
        if (strcmp(cfg->request_max, " ") == 0) {
            CONFIG_ERROR(prov, "hwaf: request_max: expected auto, unlimited, bytes, or "
                         "driver=value pairs (leave the key out for auto)");
            return 0;
        }
        if (!check_request_max(cfg->request_max, err, sizeof(err))) {
            CONFIG_ERROR(prov, "hwaf: request_max: %s", err);
            return 0;
        }
    }
    cfg->hw_drivers = normalise_list(val[CFG_HW_DRIVERS] != NULL ? val[CFG_HW_DRIVERS] : "");
    cfg->sw_drivers = normalise_list(val[CFG_SW_DRIVERS] != NULL ? val[CFG_SW_DRIVERS] : "");
    if (cfg->hw_drivers == NULL || cfg->sw_drivers == NULL)
        return 0;
    /* A driver named in both lists is a contradiction, not a choice. */
    {
        char *list = OPENSSL_strdup(cfg->hw_drivers), *w, *save = NULL;

        if (list == NULL)
            return 0;
        for (w = strtok_r(list, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
            if (hwaf_config_list_has(cfg->sw_drivers, w)) {
                CONFIG_ERROR(prov, "hwaf: driver \"%s\" is in both hw_drivers and sw_drivers", w);
                OPENSSL_free(list);
                return 0;
            }
        }
        OPENSSL_free(list);
    }

    /* cfg->text (HWAF_PARAM_CONFIG, buildinfo) is built at its first
     * request, like the provider's other texts; the log needs it now. */
    if (hwaf_debug_level < 0)
        hwaf_debug_init();
    if (hwaf_debug_level > 0) {
        char *t = hwaf_config_text(cfg);

        HWAF_DEBUG("config in effect: %s", t != NULL ? t : "(out of memory)");
        OPENSSL_free(t);
    }
    return 1;
}

/* One key's value in effect, as the section would spell it. */
static void cfg_value(const hwaf_config *cfg, int key, char *buf, size_t len)
{
    size_t o = 0;
    int i;

    buf[0] = '\0';
    switch (key) {
    case CFG_BACKENDS:
        for (i = 0; i < HWAF_BE_COUNT; i++)
            if (cfg->use_backend[i] && o < len)
                o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? " " : "", be_names[i]);
        break;
    case CFG_PREFER:
        snprintf(buf, len, "%s", cfg->prefer < 0 ? "auto" : be_names[cfg->prefer]);
        break;
    case CFG_ALLOW_SOFTWARE:
        snprintf(buf, len, "%s", cfg->allow_software ? "yes" : "no");
        break;
    case CFG_HW_DRIVERS:
    case CFG_SW_DRIVERS: {
        const char *l = key == CFG_HW_DRIVERS ? cfg->hw_drivers : cfg->sw_drivers;
        size_t n = l != NULL ? strlen(l) : 0;

        /* Normalised " a b ": without the framing spaces. */
        if (n > 2)
            snprintf(buf, len, "%.*s", (int)(n - 2), l + 1);
        break;
    }
    case CFG_DEBUG:
        snprintf(buf, len, "%s", cfg->debug ? "yes" : "no");
        break;
    case CFG_ZEROCOPY:
        snprintf(buf, len, "%s", cfg->zerocopy < 0 ? "auto" : cfg->zerocopy ? "yes" : "no");
        break;
    case CFG_ZEROCOPY_MIN:
        snprintf(buf, len, "%zu", cfg->zerocopy_min);
        break;
    case CFG_POLICY:
        snprintf(buf, len, "%s", cfg->policy == HWAF_POLICY_CPU ? "cpu" : "throughput");
        break;
    case CFG_OFFLOAD_MIN:
        if (cfg->offload_auto)
            snprintf(buf, len, "auto");
        else
            hwaf_threshold_text(cfg->offload_min, buf, len);
        break;
    case CFG_CALIBRATION:
        snprintf(buf, len, "%s", cfg->calibration != NULL ? cfg->calibration : "");
        break;
    case CFG_REQUEST_MAX:
        if (cfg->request_max == NULL)
            snprintf(buf, len, "auto");
        else  /* normalised " a b ": without the framing spaces */
            snprintf(buf, len, "%.*s", (int)strlen(cfg->request_max) - 2,
                     cfg->request_max + 1);
        break;
    case CFG_KNOWN_ANSWERS:
        snprintf(buf, len, "%s",
                 cfg->known_answers == HWAF_KAT_AT_LOAD ? "load" : "first_use");
        break;
    case CFG_COUNT:
        break;
    }
}

/*
 * Every key and its value in effect, "key = value" separated by "; ", for
 * the hwaf-config parameter (and buildinfo): OpenSSL gives a provider no
 * way to list the keys of its section, so a misspelt key cannot be refused;
 * this shows what the provider really uses instead.
 */
char *hwaf_config_text(const hwaf_config *cfg)
{
    size_t len = 0, o = 0;
    char *t, *v;
    int i;

    for (i = 0; i < CFG_COUNT; i++)
        len += strlen(cfg_names[i]) + 5;
    len += strlen(cfg->hw_drivers) + strlen(cfg->sw_drivers) + 256;
    if (cfg->calibration != NULL)
        len += strlen(cfg->calibration);
    if (cfg->request_max != NULL)
        len += strlen(cfg->request_max);
    t = OPENSSL_malloc(len);
    v = OPENSSL_malloc(len);
    if (t == NULL || v == NULL) {
        OPENSSL_free(t);
        OPENSSL_free(v);
        return NULL;
    }
    t[0] = '\0';
    for (i = 0; i < CFG_COUNT; i++) {
        cfg_value(cfg, i, v, len);
        o += (size_t)snprintf(t + o, len - o, "%s%s = %s", i ? "; " : "", cfg_names[i], v);
    }
    OPENSSL_free(v);
    return t;
}

void hwaf_config_free(hwaf_config *cfg)
{
    OPENSSL_free(cfg->hw_drivers);
    OPENSSL_free(cfg->sw_drivers);
    OPENSSL_free(cfg->text);
    OPENSSL_free(cfg->calibration);
    OPENSSL_free(cfg->request_max);
    hwaf_calib_free(cfg->calib);
    cfg->hw_drivers = cfg->sw_drivers = cfg->text = cfg->calibration = NULL;
    cfg->request_max = NULL;
    cfg->calib = NULL;
}

/*
 * Offload thresholds: the calibration file hwaf-info --calibrate writes, and the
 * choice of each implementation's threshold at load -- configured, cached
 * (from the file), or the documented default.
 *
 * The file, one implementation a line, '#' starts a comment:
 *   hwaf-calibration 1
 *   <OpenSSL name> <backend> <driver> <throughput bytes|never> <cpu bytes|never>
 *   zerocopy <backend> <driver> splice|copy
 *   probe <backend> <key>
 *   driver <backend> <kernel name>/<key bytes> <driver> <priority> <hw> <request max>
 * The zerocopy lines hold the verdict zerocopy = auto would otherwise
 * measure once per process (be_afalg.c), per driver.  The probe and driver
 * lines hold a backend's probe result (hwaf_local.h, hwaf_probe_cache.c).
 * One threshold line per implementation, one zerocopy line per driver and
 * one probe line per backend: a second one is a contradiction and fails
 * the load, naming both lines.  Thresholds take what offload_min takes.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <openssl/crypto.h>
#include "hwaf_local.h"
#include "hwaf_err.h"
#include "hwaf_debug.h"

#define CALIB_MAX_LINES 256

/* Each entry with the line it came from ("line"), for the error that
 * names both lines of a contradiction. */
typedef struct {
    char name[64], backend[16], driver[HWAF_DRIVER_NAME_MAX];
    size_t min[2];   /* [HWAF_POLICY_*] */
    int line;
} calib_line;

typedef struct {
    char backend[16], driver[HWAF_DRIVER_NAME_MAX];
    int splice, line;
} calib_zc;

typedef struct {
    char backend[16], key[HWAF_PROBE_KEY_LEN];
    int line;
} calib_probe;

typedef struct {
    char backend[16], alg[64];
    hwaf_driver drv;
} calib_found;

struct hwaf_calib_st {
    int n, nzc, nprobe, nfound;
    calib_line l[CALIB_MAX_LINES];
    calib_zc zc[CALIB_MAX_LINES];
    calib_probe probe[HWAF_BE_COUNT];
    calib_found found[CALIB_MAX_LINES];
};

const char *const hwaf_src_names[] = {
    [HWAF_SRC_DEFAULT] = "default",
    [HWAF_SRC_CONFIGURED] = "configured",
    [HWAF_SRC_CACHED] = "cached",
};

/* A driver line's request limit. */
#define REQUEST_LIMIT_MAX (1ull << 40)

/* "never" (SIZE_MAX) or a number of bytes from 0 to max into *out. */
static int parse_size(const char *v, unsigned long long max, size_t *out)
{
    char *end;
    unsigned long long n;

    if (strcmp(v, "never") == 0) {
        *out = SIZE_MAX;
        return 1;
    }
    if (v[0] < '0' || v[0] > '9')
        return 0;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (*end != '\0' || errno != 0 || n > max)
        return 0;
    *out = (size_t)n;
    return 1;
}

/* The file's probe line for backend be, or NULL. */
static const calib_probe *calib_probe_find(const hwaf_calib *c, const char *be)
{
    int i;

    for (i = 0; c != NULL && i < c->nprobe; i++)
        if (strcmp(c->probe[i].backend, be) == 0)
            return &c->probe[i];
    return NULL;
}

/* A probe line's words into c: NULL, or what is wrong with them (*first:
 * the line of the backend's earlier probe line, when that is what). */
static const char *parse_probe(hwaf_calib *c, char w[][HWAF_DRIVER_NAME_MAX], int nw,
                               int lineno, int *first)
{
    calib_probe *p = &c->probe[c->nprobe];
    const calib_probe *earlier;

    if (c->nprobe < HWAF_BE_COUNT)
        memset(p, 0, sizeof(*p));
    if (nw != 3 || strlen(w[2]) != HWAF_PROBE_KEY_LEN - 1
        || strspn(w[2], "0123456789abcdef") != HWAF_PROBE_KEY_LEN - 1)
        return "expected probe <backend> <16 hex digits>";
    if ((earlier = calib_probe_find(c, w[1])) != NULL) {
        *first = earlier->line;
        return hwaf_reason_text(HWAF_R_CALIBRATION_SECOND_LINE);
    }
    if (c->nprobe == HWAF_BE_COUNT || strlen(w[1]) >= sizeof(p->backend))
        return "unknown backend";
    strcpy(p->backend, w[1]);
    strcpy(p->key, w[2]);
    p->line = lineno;
    c->nprobe++;
    return NULL;
}

/* A driver line's words into c: NULL, or what is wrong with them. */
static const char *parse_driver(hwaf_calib *c, char w[][HWAF_DRIVER_NAME_MAX], int nw)
{
    calib_found *f = &c->found[c->nfound];
    char *end;
    long prio, hw;

    if (nw != 7)
        return "expected driver <backend> <kernel name>/<key bytes> <driver> <priority> "
               "<hw> <request max>";
    if (calib_probe_find(c, w[1]) == NULL)
        return "a driver line before its backend's probe line";
    if (c->nfound == CALIB_MAX_LINES)
        return "too many driver lines";
    memset(f, 0, sizeof(*f));
    errno = 0;
    prio = strtol(w[4], &end, 10);
    if (*end != '\0' || errno != 0 || prio < -1 || prio > 1000000)
        return "priority: expected a number";
    hw = strtol(w[5], &end, 10);
    if (*end != '\0' || hw < -1 || hw > 1)
        return "hw: expected -1, 0 or 1";
    if (!parse_size(w[6], REQUEST_LIMIT_MAX, &f->drv.req_max) || f->drv.req_max == SIZE_MAX)
        return "request max: expected bytes";
    if (strlen(w[2]) >= sizeof(f->alg))
        return "name too long";
    strcpy(f->backend, w[1]);
    strcpy(f->alg, w[2]);
    strcpy(f->drv.name, w[3]);
    f->drv.priority = (int)prio;
    f->drv.hw = (int)hw;
    c->nfound++;
    return NULL;
}

/*
 * The first 7 words of line into w, as sscanf's "%127s" seven times would
 * split them (white space as isspace() has it; a word longer than 127
 * characters goes on in the next), without sscanf's cost per line: the
 * number of words.
 */
static int split_words(const char *line, char w[7][HWAF_DRIVER_NAME_MAX])
{
    const unsigned char *p = (const unsigned char *)line;
    int nw = 0;

    while (nw < 7) {
        size_t k = 0;

        while (isspace(*p))
            p++;
        if (*p == '\0')
            break;
        while (*p != '\0' && !isspace(*p) && k < 127)
            w[nw][k++] = (char)*p++;
        w[nw++][k] = '\0';
    }
    return nw;
}

/* What a file of mode m is, for the error that says it is not a regular one. */
static const char *file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISFIFO(m) ? "a FIFO"
         : S_ISSOCK(m) ? "a socket" : "not a file";
}

enum { LINE_OK, LINE_END, LINE_LONG, LINE_NUL, LINE_ERROR };

/*
 * The next line of f into buf (at most len - 1 bytes, without its newline):
 * LINE_OK, LINE_END at the end of the file, or what is wrong with it
 * (LINE_LONG, LINE_NUL, LINE_ERROR: a read error, errno set).  *bytes
 * counts what was read.
 */
static int read_line(FILE *f, char *buf, size_t len, size_t *bytes)
{
    size_t n = 0;
    int ch;

    while ((ch = getc_unlocked(f)) != EOF) {
        ++*bytes;
        if (ch == '\n')
            break;
        if (ch == '\0')
            return LINE_NUL;
        if (n == len - 1)
            return LINE_LONG;
        buf[n++] = (char)ch;
    }
    buf[n] = '\0';
    if (ch == EOF && ferror(f))
        return LINE_ERROR;
    return ch == EOF && n == 0 ? LINE_END : LINE_OK;
}

/* The threshold line c keeps for name, backend and driver, or NULL. */
static const calib_line *calib_line_find(const hwaf_calib *c, const char *name,
                                         const char *be, const char *drv)
{
    int i;

    for (i = 0; i < c->n; i++)
        if (strcmp(c->l[i].name, name) == 0 && strcmp(c->l[i].backend, be) == 0
            && strcmp(c->l[i].driver, drv) == 0)
            return &c->l[i];
    return NULL;
}

/* The zerocopy line c keeps for backend be and driver drv, or NULL. */
static const calib_zc *calib_zc_find(const hwaf_calib *c, const char *be, const char *drv)
{
    int i;

    for (i = 0; i < c->nzc; i++)
        if (strcmp(c->zc[i].backend, be) == 0 && strcmp(c->zc[i].driver, drv) == 0)
            return &c->zc[i];
    return NULL;
}

/* The error for line lineno, a second line for what line first says. */
static void second_line(char *err, size_t errlen, const char *path, int lineno,
                        char w[][HWAF_DRIVER_NAME_MAX], int nw, int first)
{
    snprintf(err, errlen, "%s:%d: %s (%s %s%s%s, first at %s:%d)", path, lineno,
             hwaf_reason_text(HWAF_R_CALIBRATION_SECOND_LINE), w[0], w[1],
             nw > 2 ? " " : "", nw > 2 ? w[2] : "", path, first);
}

int hwaf_calib_load(const char *path, hwaf_calib **out, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    FILE *f;
    hwaf_calib *c;
    char line[512], w[7][HWAF_DRIVER_NAME_MAX];
    const char *bad;
    size_t bytes = 0;
    int lineno = 0, header = 0, nw, r, first;

    *out = NULL;
    if (fd < 0) {
        if (errno == ENOENT) {
            HWAF_DEBUG("calibration: %s does not exist (yet): default thresholds", path);
            return 1;
        }
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return 0;
    }
    /* Opened without waiting (a FIFO would wait for a writer), then
     * refused unless a regular file: a directory or a device is no
     * calibration, whatever reading it would give. */
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
        close(fd);
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: %s (%s)", path,
                 hwaf_reason_text(HWAF_R_CALIBRATION_NOT_REGULAR_FILE), file_kind(st.st_mode));
        close(fd);
        return 0;
    }
    if ((f = fdopen(fd, "r")) == NULL) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        close(fd);
        return 0;
    }
    /* Not zeroed whole (some 170 KB, most never used): each entry is
     * cleared when a line fills it, and nothing reads past the counts. */
    if ((c = OPENSSL_malloc(sizeof(*c))) == NULL) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return 0;
    }
    c->n = c->nzc = c->nprobe = c->nfound = 0;
    while ((r = read_line(f, line, sizeof(line), &bytes)) != LINE_END) {
        char *hash;
        calib_line *l;

        lineno++;
        if (r == LINE_LONG) {
            snprintf(err, errlen, "%s:%d: line too long", path, lineno);
            goto bad;
        }
        if (r == LINE_NUL) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno,
                     hwaf_reason_text(HWAF_R_CALIBRATION_NUL_BYTE));
            goto bad;
        }
        if (r == LINE_ERROR) {
            snprintf(err, errlen, "%s:%d: cannot read: %s", path, lineno, strerror(errno));
            goto bad;
        }
        if ((hash = strchr(line, '#')) != NULL)
            *hash = '\0';
        nw = split_words(line, w);
        if (nw <= 0)
            continue;
        if (!header) {
            if (nw != 2 || strcmp(w[0], "hwaf-calibration") != 0 || strcmp(w[1], "1") != 0) {
                snprintf(err, errlen, "%s:%d: expected \"hwaf-calibration 1\" first", path,
                         lineno);
                goto bad;
            }
            header = 1;
            continue;
        }
        if (strcmp(w[0], "probe") == 0 || strcmp(w[0], "driver") == 0) {
            first = 0;
            bad = w[0][0] == 'p' ? parse_probe(c, w, nw, lineno, &first)
                                 : parse_driver(c, w, nw);
            if (bad != NULL && first > 0) {
                second_line(err, errlen, path, lineno, w, 2, first);
                goto bad;
            }
            if (bad != NULL) {
                snprintf(err, errlen, "%s:%d: %s", path, lineno, bad);
                goto bad;
            }
            continue;
        }
        if (strcmp(w[0], "zerocopy") == 0) {
            calib_zc *z = &c->zc[c->nzc];
            const calib_zc *earlier;

            if (c->nzc < CALIB_MAX_LINES)
                memset(z, 0, sizeof(*z));
            if (nw != 4 || (strcmp(w[3], "splice") != 0 && strcmp(w[3], "copy") != 0)) {
                snprintf(err, errlen, "%s:%d: expected zerocopy <backend> <driver> "
                         "splice|copy", path, lineno);
                goto bad;
            }
            if ((earlier = calib_zc_find(c, w[1], w[2])) != NULL) {
                second_line(err, errlen, path, lineno, w, 3, earlier->line);
                goto bad;
            }
            if (c->nzc == CALIB_MAX_LINES) {
                snprintf(err, errlen, "%s:%d: more than %d zerocopy lines", path, lineno,
                         CALIB_MAX_LINES);
                goto bad;
            }
            if (strlen(w[1]) >= sizeof(z->backend)) {
                snprintf(err, errlen, "%s:%d: name too long", path, lineno);
                goto bad;
            }
            strcpy(z->backend, w[1]);
            strcpy(z->driver, w[2]);
            z->splice = strcmp(w[3], "splice") == 0;
            z->line = lineno;
            c->nzc++;
            continue;
        }
        if (nw != 5) {
            snprintf(err, errlen, "%s:%d: expected <name> <backend> <driver> "
                     "<throughput bytes|never> <cpu bytes|never>", path, lineno);
            goto bad;
        }
        if (c->n == CALIB_MAX_LINES) {
            snprintf(err, errlen, "%s:%d: more than %d lines", path, lineno,
                     CALIB_MAX_LINES);
            goto bad;
        }
        l = &c->l[c->n];
        memset(l, 0, sizeof(*l));
        if (strlen(w[0]) >= sizeof(l->name) || strlen(w[1]) >= sizeof(l->backend)) {
            snprintf(err, errlen, "%s:%d: name too long", path, lineno);
            goto bad;
        }
        if (!parse_size(w[3], HWAF_OFFLOAD_MIN_MAX, &l->min[HWAF_POLICY_THROUGHPUT])
            || !parse_size(w[4], HWAF_OFFLOAD_MIN_MAX, &l->min[HWAF_POLICY_CPU])) {
            snprintf(err, errlen, "%s:%d: threshold \"%s %s\": expected bytes from 0 to "
                     "%llu or never", path, lineno, w[3], w[4], HWAF_OFFLOAD_MIN_MAX);
            goto bad;
        }
        {
            const calib_line *earlier = calib_line_find(c, w[0], w[1], w[2]);

            if (earlier != NULL) {
                second_line(err, errlen, path, lineno, w, 3, earlier->line);
                goto bad;
            }
        }
        strcpy(l->name, w[0]);
        strcpy(l->backend, w[1]);
        strcpy(l->driver, w[2]);
        l->line = lineno;
        c->n++;
    }
    if (bytes == 0) {
        snprintf(err, errlen, "%s: %s", path, hwaf_reason_text(HWAF_R_CALIBRATION_EMPTY));
        goto bad;
    }
    if (!header) {
        snprintf(err, errlen, "%s: expected \"hwaf-calibration 1\" first, found only "
                 "comments and blank lines", path);
        goto bad;
    }
    fclose(f);
    HWAF_DEBUG("calibration: %d thresholds, %d zero-copy verdicts and %d probe results "
               "from %s", c->n, c->nzc, c->nprobe, path);
    *out = c;
    return 1;
 bad:
    fclose(f);
    OPENSSL_free(c);
    return 0;
}

void hwaf_calib_free(hwaf_calib *c)
{
    OPENSSL_free(c);
}

static const calib_line *calib_find(const hwaf_calib *c, const hwaf_impl *impl)
{
    size_t nl = strcspn(impl->alg->names, ":");
    int i;

    for (i = 0; c != NULL && i < c->n; i++)
        if (strlen(c->l[i].name) == nl
            && strncmp(c->l[i].name, impl->alg->names, nl) == 0
            && strcmp(c->l[i].backend, impl->be->name) == 0
            && strcmp(c->l[i].driver, impl->drv.name) == 0)
            return &c->l[i];
    return NULL;
}

void hwaf_probe_alg_token(const hwaf_alg *alg, char *buf, size_t len)
{
    /* "%s/%u" without snprintf's cost: a cached load asks it once per
     * algorithm and backend. */
    char num[12];
    size_t kl = strlen(alg->kname), nd = 0;
    unsigned int k = alg->keylen;

    do
        num[nd++] = (char)('0' + k % 10);
    while ((k /= 10) != 0);
    if (len == 0)
        return;
    if (kl + 1 + nd >= len) {
        snprintf(buf, len, "%s/%u", alg->kname, alg->keylen);   /* cut short */
        return;
    }
    memcpy(buf, alg->kname, kl);
    buf[kl++] = '/';
    while (nd > 0)
        buf[kl++] = num[--nd];
    buf[kl] = '\0';
}

const char *hwaf_calib_probe_key(const hwaf_calib *c, const char *be)
{
    const calib_probe *p = calib_probe_find(c, be);

    return p != NULL ? p->key : NULL;
}

int hwaf_calib_probe_drivers(const hwaf_calib *c, const char *be, const hwaf_alg *alg,
                             hwaf_driver *out, int max)
{
    char tok[64];
    int i, n = 0;

    hwaf_probe_alg_token(alg, tok, sizeof(tok));
    /* The token first, and its first byte inline: most lines differ there. */
    for (i = 0; c != NULL && i < c->nfound && n < max; i++)
        if (c->found[i].alg[0] == tok[0] && strcmp(c->found[i].alg, tok) == 0
            && strcmp(c->found[i].backend, be) == 0)
            out[n++] = c->found[i].drv;
    return n;
}

/* The file's zero-copy verdict for impl's driver: 1 splice, 0 copy, -1 none. */
static int calib_zerocopy(const hwaf_calib *c, const hwaf_impl *impl)
{
    int i;

    for (i = 0; c != NULL && i < c->nzc; i++)
        if (strcmp(c->zc[i].backend, impl->be->name) == 0
            && strcmp(c->zc[i].driver, impl->drv.name) == 0)
            return c->zc[i].splice;
    return -1;
}

/*
 * Without a calibration: a driver on the CPU does through the kernel what
 * OpenSSL does in the process, plus system calls, so it never pays; for an
 * engine off the CPU, a conservative size (docs/config.md).
 */
void hwaf_threshold_assign(hwaf_impl *impl, const hwaf_config *cfg)
{
    const calib_line *l;
    int zc;

    /* zerocopy = auto: the calibration's verdict for the driver when it has
     * one; else the backend measures once, at run time. */
    if (impl->zerocopy < 0 && (zc = calib_zerocopy(cfg->calib, impl)) >= 0) {
        impl->zerocopy = zc;
        HWAF_DEBUG("calibration: %s via %s %s: zero-copy %s (cached)", impl->alg->kname,
                   impl->be->name, impl->drv.name, zc ? "splice" : "copy");
    }

    if (!cfg->offload_auto) {
        impl->offload_min = cfg->offload_min;
        impl->offload_src = HWAF_SRC_CONFIGURED;
    } else if ((l = calib_find(cfg->calib, impl)) != NULL) {
        impl->offload_min = l->min[cfg->policy];
        impl->offload_src = HWAF_SRC_CACHED;
    } else {
        impl->offload_min = !impl->hw ? SIZE_MAX
                          : cfg->policy == HWAF_POLICY_CPU ? HWAF_DEFAULT_OFFLOAD_HW_CPU
                          : HWAF_DEFAULT_OFFLOAD_HW_THROUGHPUT;
        impl->offload_src = HWAF_SRC_DEFAULT;
    }
}

const char *hwaf_threshold_text(size_t v, char *buf, size_t len)
{
    if (v == SIZE_MAX)
        snprintf(buf, len, "never");
    else
        snprintf(buf, len, "%zu", v);
    return buf;
}

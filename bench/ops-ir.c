/*
 * ops-ir ALG PROPQUERY SIZE N [iv]: N operations of SIZE bytes as hwaf-bench
 * does them (one EVP_EncryptUpdate on a context initialised once, padding
 * off; a digest: EVP_DigestInit_ex2 + Update + Final_ex), inside run_ops,
 * after N/10 to warm up.  With "iv", a cipher operation starts with a new
 * IV as OpenVPN's packets do (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv,
 * -1), then the update).  For counting instructions per operation, which
 * the host's load does not move as it moves time:
 *
 *   valgrind --tool=callgrind --toggle-collect=run_ops ./ops-ir AES-128-CBC provider=hwaf 16 2000
 *
 * gives the instructions of 1.1 N operations ("Collected").  Built by hand:
 * cc -O2 -o ops-ir bench/ops-ir.c -lcrypto (docs/benchmark.md).
 *
 * AES-128-GCM seals one message per operation as hwaf-bench does (init with
 * the IV, 13 bytes of AAD, the data, final, tag); through hwaf with
 * hwaf-offload = 1, the kernel path.  PROPQUERY "bare-afalg": the same
 * message through a bare AF_ALG aead socket (sendmsg + readv), the user
 * space a kernel request cannot do with less.  HMAC-SHA2-256: EVP_MAC_init
 * (same key) + update + final per operation, or bare AF_ALG hmac(sha256):
 * send + read.
 *
 * PROPQUERY "direct-hwaf": the same GCM or HMAC messages made by calling
 * hwaf's dispatch functions (OSSL_PROVIDER_query_operation) directly, as
 * EVP would call them, without EVP: what EVP's own layer costs is the
 * difference to "provider=hwaf".  Every run also prints the wall-clock time
 * per operation of its N operations (ns/op), for interleaved runs in one
 * guest.  PROPQUERY "mix:Q1,Q2,...": several of these interleaved in one
 * process, block by block (see mix() below).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/core_names.h>
#include <openssl/core_dispatch.h>
#include <time.h>
#include <linux/if_alg.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static unsigned char in[1 << 20], out[(1 << 20) + 64];
static unsigned char gcm_iv[12], aad[13];
static int gcm, reinit, bare_op = -1, bare_flags;
static unsigned char op_iv[16];
static EVP_MAC_CTX *mac;

/* direct-hwaf: hwaf's own functions and context, no EVP. */
static struct {
    void *ctx;
    OSSL_FUNC_cipher_encrypt_init_fn *einit;
    OSSL_FUNC_cipher_update_fn *update;
    OSSL_FUNC_cipher_final_fn *final;
    OSSL_FUNC_cipher_get_ctx_params_fn *get;
    OSSL_FUNC_mac_init_fn *minit;
    OSSL_FUNC_mac_update_fn *mupdate;
    OSSL_FUNC_mac_final_fn *mfinal;
} d;

static int direct_op(size_t len)
{
    size_t ol = 0;

    if (d.minit != NULL)
        return d.minit(d.ctx, NULL, 0, NULL) && d.mupdate(d.ctx, in, len)
               && d.mfinal(d.ctx, out, &ol, 64);
    {
        OSSL_PARAM p[] = { OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                                             out + len, 16),
                           OSSL_PARAM_construct_end() };

        return d.einit(d.ctx, NULL, 0, gcm_iv, sizeof(gcm_iv), NULL)
               && d.update(d.ctx, NULL, &ol, 0, aad, sizeof(aad))
               && d.update(d.ctx, out, &ol, len, in, len)
               && d.final(d.ctx, out + len, &ol, 16)
               && d.get(d.ctx, p);
    }
}

/* hwaf's implementation of name for operation op (its first, the AF_ALG
 * one where both backends serve it), set up as ops-ir's EVP lines are. */
static int direct_open(int op, const char *name, const unsigned char *key)
{
    OSSL_PROVIDER *prov = OSSL_PROVIDER_load(NULL, "hwaf");
    const OSSL_ALGORITHM *a;
    const OSSL_DISPATCH *f = NULL;
    void *(*newctx)(void *) = NULL;
    int nc = 0, force = 1;
    size_t nl = strlen(name);

    if (prov == NULL || (a = OSSL_PROVIDER_query_operation(prov, op, &nc)) == NULL)
        return 0;
    for (; a->algorithm_names != NULL; a++)
        if (strncmp(a->algorithm_names, name, nl) == 0
            && (a->algorithm_names[nl] == ':' || a->algorithm_names[nl] == 0)
            && (f == NULL || strstr(a->property_definition, "afalg") != NULL))
            f = a->implementation;
    for (; f != NULL && f->function_id != 0; f++) {
        void (*fn)(void) = f->function;

        if (f->function_id == (op == OSSL_OP_MAC ? OSSL_FUNC_MAC_NEWCTX : OSSL_FUNC_CIPHER_NEWCTX))
            newctx = (void *(*)(void *))fn;
        else if (op == OSSL_OP_MAC && f->function_id == OSSL_FUNC_MAC_INIT)
            d.minit = (OSSL_FUNC_mac_init_fn *)fn;
        else if (op == OSSL_OP_MAC && f->function_id == OSSL_FUNC_MAC_UPDATE)
            d.mupdate = (OSSL_FUNC_mac_update_fn *)fn;
        else if (op == OSSL_OP_MAC && f->function_id == OSSL_FUNC_MAC_FINAL)
            d.mfinal = (OSSL_FUNC_mac_final_fn *)fn;
        else if (op == OSSL_OP_CIPHER && f->function_id == OSSL_FUNC_CIPHER_ENCRYPT_INIT)
            d.einit = (OSSL_FUNC_cipher_encrypt_init_fn *)fn;
        else if (op == OSSL_OP_CIPHER && f->function_id == OSSL_FUNC_CIPHER_UPDATE)
            d.update = (OSSL_FUNC_cipher_update_fn *)fn;
        else if (op == OSSL_OP_CIPHER && f->function_id == OSSL_FUNC_CIPHER_FINAL)
            d.final = (OSSL_FUNC_cipher_final_fn *)fn;
        else if (op == OSSL_OP_CIPHER && f->function_id == OSSL_FUNC_CIPHER_GET_CTX_PARAMS)
            d.get = (OSSL_FUNC_cipher_get_ctx_params_fn *)fn;
    }
    if (newctx == NULL || (d.ctx = newctx(OSSL_PROVIDER_get0_provider_ctx(prov))) == NULL)
        return 0;
    if (op == OSSL_OP_MAC) {
        OSSL_PARAM p[] = { OSSL_PARAM_construct_utf8_string("digest", "SHA2-256", 0),
                           OSSL_PARAM_construct_int("hwaf-offload", &force),
                           OSSL_PARAM_construct_end() };

        return d.minit != NULL && d.mupdate != NULL && d.mfinal != NULL
               && d.minit(d.ctx, key, 32, p);
    } else {
        OSSL_PARAM p[] = { OSSL_PARAM_construct_int("hwaf-offload", &force),
                           OSSL_PARAM_construct_end() };

        return d.einit != NULL && d.update != NULL && d.final != NULL && d.get != NULL
               && d.einit(d.ctx, key, 16, gcm_iv, sizeof(gcm_iv), p);
    }
}

static int bare_gcm(size_t len)
{
    char cbuf[CMSG_SPACE(4) + CMSG_SPACE(sizeof(struct af_alg_iv) + 12) + CMSG_SPACE(4)] = { 0 };
    struct msghdr msg = { 0 };
    struct cmsghdr *h;
    struct af_alg_iv *aiv;
    struct iovec tx[2] = { { aad, sizeof(aad) }, { in, len } };
    unsigned char scratch[sizeof(aad)];
    struct iovec rx[2] = { { scratch, sizeof(scratch) }, { out, len + 16 } };

    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof(cbuf);
    msg.msg_iov = tx;
    msg.msg_iovlen = 2;
    h = CMSG_FIRSTHDR(&msg);
    h->cmsg_level = SOL_ALG;
    h->cmsg_type = ALG_SET_OP;
    h->cmsg_len = CMSG_LEN(4);
    *(unsigned int *)CMSG_DATA(h) = ALG_OP_ENCRYPT;
    h = CMSG_NXTHDR(&msg, h);
    h->cmsg_level = SOL_ALG;
    h->cmsg_type = ALG_SET_IV;
    h->cmsg_len = CMSG_LEN(sizeof(struct af_alg_iv) + 12);
    aiv = (struct af_alg_iv *)CMSG_DATA(h);
    aiv->ivlen = 12;
    memcpy(aiv->iv, gcm_iv, 12);
    h = CMSG_NXTHDR(&msg, h);
    h->cmsg_level = SOL_ALG;
    h->cmsg_type = ALG_SET_AEAD_ASSOCLEN;
    h->cmsg_len = CMSG_LEN(4);
    *(unsigned int *)CMSG_DATA(h) = sizeof(aad);
    return sendmsg(bare_op, &msg, 0) == (ssize_t)(sizeof(aad) + len)
           && readv(bare_op, rx, 2) == (ssize_t)(sizeof(aad) + len + 16);
}

static int seal(EVP_CIPHER_CTX *c, size_t len)
{
    int ol, fl;

    return EVP_EncryptInit_ex(c, NULL, NULL, NULL, gcm_iv)
           && EVP_EncryptUpdate(c, NULL, &ol, aad, sizeof(aad))
           && EVP_EncryptUpdate(c, out, &ol, in, (int)len)
           && EVP_EncryptFinal_ex(c, out + ol, &fl)
           && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, out + len) > 0;
}

__attribute__((noinline)) int run_ops(EVP_CIPHER_CTX *c, EVP_MD_CTX *m, const EVP_MD *md,
                                      size_t len, long n)
{
    unsigned int ml;
    int ol;
    long i;

    for (i = 0; i < n; i++) {
        if (d.ctx != NULL) {
            if (!direct_op(len))
                return 0;
        } else if (bare_op >= 0 && !gcm) {
            if (send(bare_op, in, len, bare_flags) != (ssize_t)len || read(bare_op, out, 32) != 32)
                return 0;
        } else if (mac != NULL) {
            size_t ml2;

            if (!EVP_MAC_init(mac, NULL, 0, NULL) || !EVP_MAC_update(mac, in, len)
                || !EVP_MAC_final(mac, out, &ml2, 64))
                return 0;
        } else if (bare_op >= 0) {
            if (!bare_gcm(len))
                return 0;
        } else if (gcm) {
            if (!seal(c, len))
                return 0;
        } else if (c != NULL) {
            op_iv[15] = (unsigned char)i;
            if ((reinit && !EVP_CipherInit_ex(c, NULL, NULL, NULL, op_iv, -1))
                || !EVP_EncryptUpdate(c, out, &ol, in, (int)len))
                return 0;
        } else if (!EVP_DigestInit_ex2(m, md, NULL) || !EVP_DigestUpdate(m, in, len)
                   || !EVP_DigestFinal_ex(m, out, &ml)) {
            return 0;
        }
    }
    return 1;
}

/* One implementation of alg as query q names it, set up in s. */
typedef struct {
    EVP_CIPHER *ci;
    EVP_CIPHER_CTX *c;
    EVP_MD *md;
    EVP_MD_CTX *m;
    int bare_op, bare_flags;
    EVP_MAC_CTX *mac;
    __typeof__(d) d;
} slot;

static void slot_use(const slot *s)
{
    bare_op = s->bare_op;
    bare_flags = s->bare_flags;
    mac = s->mac;
    d = s->d;
}

static int setup(const char *alg, const char *q, slot *s)
{
    unsigned char key[64] = { 1, 2, 3 }, iv[16] = { 0 };

    key[32] = 9;    /* XTS: the key halves differ */
    memset(s, 0, sizeof(*s));
    bare_op = -1;
    bare_flags = 0;
    mac = NULL;
    memset(&d, 0, sizeof(d));
    if (strcmp(q, "direct-hwaf") == 0) {
        if (!direct_open(gcm ? OSSL_OP_CIPHER : OSSL_OP_MAC, gcm ? alg : "HMAC", key)) {
            ERR_print_errors_fp(stderr);
            return 3;
        }
        printf("%s from hwaf's functions, no EVP\n", alg);
    } else if (strcmp(alg, "HMAC-SHA2-256") == 0 && strncmp(q, "bare-afalg", 10) != 0) {
        EVP_MAC *mm = EVP_MAC_fetch(NULL, "HMAC", q);
        int force = 1;
        OSSL_PARAM p[] = { OSSL_PARAM_construct_utf8_string("digest", "SHA2-256", 0),
                           OSSL_PARAM_construct_int("hwaf-offload", &force),
                           OSSL_PARAM_construct_end() };

        if (strstr(q, "hwaf") == NULL)
            p[1] = p[2];
        if (mm == NULL || (mac = EVP_MAC_CTX_new(mm)) == NULL
            || !EVP_MAC_init(mac, key, 32, p)) {
            ERR_print_errors_fp(stderr);
            return 3;
        }
        printf("%s from %s\n", alg, OSSL_PROVIDER_get0_name(EVP_MAC_get0_provider(mm)));
    } else if (strcmp(q, "bare-afalg") == 0 || (!gcm && strcmp(q, "bare-afalg-more") == 0)) {
        struct sockaddr_alg sa = { .salg_family = AF_ALG, .salg_type = "aead",
                                   .salg_name = "gcm(aes)" };
        int t = socket(AF_ALG, SOCK_SEQPACKET, 0);

        if (!gcm) {
            strcpy((char *)sa.salg_type, "hash");
            strcpy((char *)sa.salg_name, "hmac(sha256)");
        }
        if (t < 0 || bind(t, (struct sockaddr *)&sa, sizeof(sa)) != 0
            || setsockopt(t, SOL_ALG, ALG_SET_KEY, key, gcm ? 16 : 32) != 0
            || (gcm && setsockopt(t, SOL_ALG, ALG_SET_AEAD_AUTHSIZE, NULL, 16) != 0)
            || (bare_op = accept(t, NULL, 0)) < 0) {
            perror("AF_ALG bind");
            return 3;
        }
        if (strcmp(q, "bare-afalg-more") == 0)
            bare_flags = MSG_MORE;
        printf("%s bare AF_ALG%s\n", alg, bare_flags ? ", data sent with MSG_MORE" : "");
    } else if ((s->ci = EVP_CIPHER_fetch(NULL, alg, q)) != NULL) {
        int force = 1;
        OSSL_PARAM p[] = { OSSL_PARAM_construct_int("hwaf-offload", &force),
                           OSSL_PARAM_construct_end() };

        /* GCM through hwaf: the kernel path; CBC, CTR, XTS: hwaf's own
         * dispatch (software below the threshold, as hwaf-auto). */
        s->c = EVP_CIPHER_CTX_new();
        if (s->c == NULL || !EVP_EncryptInit_ex2(s->c, s->ci, key, iv,
                                              gcm && strstr(q, "hwaf") != NULL ? p : NULL))
            return 3;
        EVP_CIPHER_CTX_set_padding(s->c, 0);
        printf("%s from %s\n", alg, OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(s->ci)));
    } else if ((s->md = EVP_MD_fetch(NULL, alg, q)) != NULL) {
        if ((s->m = EVP_MD_CTX_new()) == NULL)
            return 3;
        printf("%s from %s\n", alg, OSSL_PROVIDER_get0_name(EVP_MD_get0_provider(s->md)));
    } else {
        ERR_print_errors_fp(stderr);
        return 4;
    }
    s->bare_op = bare_op;
    s->bare_flags = bare_flags;
    s->mac = mac;
    s->d = d;
    return 0;
}

static double now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return a < b ? -1 : a > b;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * PROPQUERY "mix:Q1,Q2,...": the implementations Q1, Q2, ... in one process,
 * N rounds of blocks of 200 operations each, in turn (the order rotating
 * each round), so that the host's load moves all alike.  Per
 * implementation the median ns/op over the rounds, and per round the ratio
 * of Q1's time to each other's (Q1 first: the bare loop), its median and
 * range; with "direct-hwaf" and "provider=hwaf" both present, EVP's own
 * layer: (EVP time - direct time) / Q1's time, per round.
 */
#define MIX_MAX 6
#define MIX_BLOCK 200
static int mix(const char *alg, char *list, size_t len, long rounds)
{
    slot s[MIX_MAX];
    const char *name[MIX_MAX];
    double *t[MIX_MAX], *r;
    int n = 0, i, j, di = -1, hi = -1;
    long k;
    char *tok, *save = NULL;

    for (tok = strtok_r(list, ",", &save); tok != NULL && n < MIX_MAX;
         tok = strtok_r(NULL, ",", &save)) {
        if (setup(alg, tok, &s[n]) != 0)
            return 3;
        if (strcmp(tok, "direct-hwaf") == 0)
            di = n;
        if (strstr(tok, "provider=hwaf") != NULL)
            hi = n;
        name[n++] = tok;
    }
    r = calloc((size_t)rounds, sizeof(double));
    for (i = 0; i < n; i++)
        t[i] = calloc((size_t)rounds, sizeof(double));
    if (r == NULL)
        return 2;
    for (i = 0; i < n; i++) {
        if (t[i] == NULL)
            return 2;
        slot_use(&s[i]);
        if (!run_ops(s[i].c, s[i].m, s[i].md, len, MIX_BLOCK))
            return 5;
    }
    for (k = 0; k < rounds; k++) {
        for (j = 0; j < n; j++) {
            double t0;

            i = (int)((j + k) % n);
            slot_use(&s[i]);
            t0 = now_ns();
            if (!run_ops(s[i].c, s[i].m, s[i].md, len, MIX_BLOCK)) {
                ERR_print_errors_fp(stderr);
                return 5;
            }
            t[i][k] = (now_ns() - t0) / MIX_BLOCK;
        }
    }
    for (i = 0; i < n; i++) {
        double lo = 1e300, hi2 = 0;

        for (k = 0; k < rounds; k++) {
            r[k] = t[0][k] / t[i][k];
            lo = r[k] < lo ? r[k] : lo;
            hi2 = r[k] > hi2 ? r[k] : hi2;
        }
        printf("%s %s %zu: %s/this %.3f (%.3f-%.3f)", alg, name[i], len, name[0],
               median(r, (int)rounds), lo, hi2);
        for (k = 0; k < rounds; k++)
            r[k] = t[i][k];
        printf(", %.0f ns/op\n", median(r, (int)rounds));
    }
    if (di >= 0 && hi >= 0) {
        double lo = 1e300, hi2 = 0;

        for (k = 0; k < rounds; k++) {
            r[k] = (t[hi][k] - t[di][k]) / t[0][k];
            lo = r[k] < lo ? r[k] : lo;
            hi2 = r[k] > hi2 ? r[k] : hi2;
        }
        printf("%s %zu: EVP's own layer (%s - %s) / %s %.3f (%.3f-%.3f)\n", alg, len,
               name[hi], name[di], name[0], median(r, (int)rounds), lo, hi2);
    }
    return 0;
}

int main(int argc, char **argv)
{
    slot s;
    size_t len;
    long n;
    struct timespec t0, t1;
    int rc;

    if (argc < 5 || argc > 6 || (len = strtoul(argv[3], NULL, 0)) > sizeof(in)
        || (n = atol(argv[4])) <= 0 || (argc == 6 && strcmp(argv[5], "iv") != 0)) {
        fprintf(stderr, "usage: ops-ir ALG PROPQUERY SIZE N [iv]\n");
        return 2;
    }
    reinit = argc == 6;
    if (OSSL_PROVIDER_load(NULL, "default") == NULL || OSSL_PROVIDER_load(NULL, "hwaf") == NULL) {
        ERR_print_errors_fp(stderr);
        return 2;
    }
    gcm = strstr(argv[1], "GCM") != NULL;
    if (strncmp(argv[2], "mix:", 4) == 0)
        return mix(argv[1], argv[2] + 4, len, n);
    if ((rc = setup(argv[1], argv[2], &s)) != 0)
        return rc;
    if (!run_ops(s.c, s.m, s.md, len, n / 10) || clock_gettime(CLOCK_MONOTONIC, &t0) != 0
        || !run_ops(s.c, s.m, s.md, len, n) || clock_gettime(CLOCK_MONOTONIC, &t1) != 0) {
        ERR_print_errors_fp(stderr);
        return 5;
    }
    printf("%s %s %zu: %.0f ns/op\n", argv[1], argv[2], len,
           ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n);
    EVP_CIPHER_CTX_free(s.c);
    EVP_MD_CTX_free(s.m);
    EVP_CIPHER_free(s.ci);
    EVP_MD_free(s.md);
    return 0;
}

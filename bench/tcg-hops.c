/*
 * tcg-hops ROUNDS BATCH: what one more call level and a few locked
 * read-modify-writes cost per operation, with nothing of OpenSSL in the
 * way.  The operation is a 16-byte block function called through a
 * pointer, as EVP calls a provider's update; the ways differ only in what
 * stands between the caller and that function:
 *
 *   one-hop      the pointer leads to the block function (EVP calling the
 *                default provider's update)
 *   two-hop      the pointer leads to a function that jumps through a
 *                second pointer to it (EVP calling hwaf's update, which
 *                ends in a jump to the default provider's function)
 *   two-hop+chk  as two-hop, with the tests and counts of hwaf's cipher
 *                fast path (size range and mask, fork generation, two
 *                counters in the context)
 *   one-hop+1at  one-hop and one locked add to a shared counter
 *   one-hop+4at  one-hop and four locked read-modify-writes (an exchange,
 *                a compare-exchange, two adds: a digest message's spare
 *                context taken and left, and its two counters)
 *
 * The ways take turns, BATCH operations each per round, the order reversed
 * every other round (small batches and many rounds: under a loaded host
 * many rounds are slowed, the least and first quartile much less).
 * Printed per way: the least, first-quartile and median time per
 * operation, and the median (quartiles) of the per-round difference to
 * one-hop in ns.  Built by hand (docs/benchmark.md):
 *
 *   cc -O2 -o tcg-hops bench/tcg-hops.c
 *   ./tcg-hops 401 2000
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAYS 5

typedef int block_fn(void *c, unsigned char *out, size_t *outl, size_t outsize,
                     const unsigned char *in, size_t inl);

typedef struct {
    block_fn *fn;               /* the second hop's target */
    void *c;
    size_t lo, span, mask;      /* the fast path's size test */
    unsigned gen;
    uint64_t ops, bytes;
    unsigned char key[16], iv[16];
} ctx_t;

static unsigned fork_gen;
static uint64_t shared_ops, shared_bytes;
static void *spare;

/* Sixteen bytes chained through a toy round, about the size of work of
 * the short loop inside a hardware-instruction block function. */
__attribute__((noinline)) static int block(void *vc, unsigned char *out, size_t *outl,
                                           size_t outsize, const unsigned char *in, size_t inl)
{
    ctx_t *c = vc;
    size_t i;

    (void)outsize;
    for (i = 0; i < inl; i++) {
        c->iv[i & 15] = (unsigned char)((in[i] ^ c->iv[i & 15]) + c->key[i & 15]);
        out[i] = c->iv[i & 15];
    }
    *outl = inl;
    return 1;
}

__attribute__((noinline)) static int two_hop(void *vc, unsigned char *out, size_t *outl,
                                             size_t outsize, const unsigned char *in,
                                             size_t inl)
{
    ctx_t *c = vc;

    return c->fn(c->c, out, outl, outsize, in, inl);
}

__attribute__((noinline)) static int slow(void *vc, unsigned char *out, size_t *outl,
                                          size_t outsize, const unsigned char *in, size_t inl)
{
    (void)vc, (void)out, (void)outl, (void)outsize, (void)in, (void)inl;
    return 0;
}

__attribute__((noinline)) static int two_hop_chk(void *vc, unsigned char *out, size_t *outl,
                                                 size_t outsize, const unsigned char *in,
                                                 size_t inl)
{
    ctx_t *c = vc;

    if (inl - c->lo < c->span && (inl & c->mask) == 0 && inl <= outsize
        && c->gen == fork_gen) {
        c->ops++;
        c->bytes += inl;
        return c->fn(c->c, out, outl, outsize, in, inl);
    }
    return slow(vc, out, outl, outsize, in, inl);
}

__attribute__((noinline)) static int one_at(void *vc, unsigned char *out, size_t *outl,
                                            size_t outsize, const unsigned char *in, size_t inl)
{
    int ok = block(vc, out, outl, outsize, in, inl);

    __atomic_add_fetch(&shared_ops, 1, __ATOMIC_RELAXED);
    return ok;
}

__attribute__((noinline)) static int four_at(void *vc, unsigned char *out, size_t *outl,
                                             size_t outsize, const unsigned char *in, size_t inl)
{
    void *mine = __atomic_exchange_n(&spare, NULL, __ATOMIC_ACQUIRE), *none = NULL;
    int ok = block(vc, out, outl, outsize, in, inl);

    __atomic_compare_exchange_n(&spare, &none, mine != NULL ? mine : vc, 0, __ATOMIC_RELEASE,
                                __ATOMIC_RELAXED);
    __atomic_add_fetch(&shared_ops, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&shared_bytes, inl, __ATOMIC_RELAXED);
    return ok;
}

static const char *const names[WAYS] = {
    "one-hop", "two-hop", "two-hop+chk", "one-hop+1at", "one-hop+4at",
};

/* Read through a volatile pointer so that no call is resolved at compile time. */
static block_fn *volatile entry[WAYS] = { block, two_hop, two_hop_chk, one_at, four_at };

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    static unsigned char in[16], out[16];
    ctx_t ctx[WAYS];
    double *t[WAYS], *diff[WAYS];
    long rounds, batch, r, i;
    size_t outl;
    int w;

    if (argc != 3 || (rounds = atol(argv[1])) < 4 || (batch = atol(argv[2])) <= 0) {
        fprintf(stderr, "usage: tcg-hops ROUNDS(>=4) BATCH\n");
        return 2;
    }
    memset(ctx, 0, sizeof(ctx));
    for (w = 0; w < WAYS; w++) {
        ctx[w].fn = block;
        ctx[w].c = &ctx[w];
        ctx[w].lo = 1;
        ctx[w].span = 65535;
        ctx[w].mask = 15;
        memset(ctx[w].key, w + 1, sizeof(ctx[w].key));
        if ((t[w] = calloc((size_t)rounds, sizeof(double))) == NULL
            || (diff[w] = calloc((size_t)rounds, sizeof(double))) == NULL)
            return 2;
    }
    for (r = 0; r < rounds; r++) {
        for (i = 0; i < WAYS; i++) {
            int way = (r & 1) ? WAYS - 1 - (int)i : (int)i;
            block_fn *f = entry[way];
            void *c = &ctx[way];
            double t0 = now();
            long n;

            for (n = 0; n < batch; n++)
                if (!f(c, out, &outl, sizeof(out), in, sizeof(in)))
                    return 4;
            t[way][r] = (now() - t0) / (double)batch * 1e9;
        }
        for (w = 0; w < WAYS; w++)
            diff[w][r] = t[w][r] - t[0][r];
    }
    printf("tcg-hops, 16-byte operations, %ld rounds of %ld:\n", rounds, batch);
    for (w = 0; w < WAYS; w++) {
        qsort(t[w], (size_t)rounds, sizeof(double), cmp_double);
        qsort(diff[w], (size_t)rounds, sizeof(double), cmp_double);
        printf("  %-12s least %6.1f ns/op, first quartile %6.1f, median %6.1f; minus one-hop"
               " %+6.1f ns (%+.1f to %+.1f)\n",
               names[w], t[w][0], t[w][rounds / 4], t[w][rounds / 2], diff[w][rounds / 2],
               diff[w][rounds / 4], diff[w][3 * rounds / 4]);
    }
    return (int)(ctx[0].ops & 0); /* keeps the counts alive */
}

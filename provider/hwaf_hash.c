/*
 * What the digest and MAC layers share (hwaf_hash.h): the running hash in
 * the kernel with its fork() snapshot, and the hold-back buffer.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <openssl/crypto.h>
#include "hwaf_hash.h"
#include "hwaf_err.h"
#include "hwaf_soft.h"

#define FROM_NODE(n) ((hwaf_khash *)((char *)(n) - offsetof(hwaf_khash, node)))

static void node_prepare(hwaf_fork_node *n)
{
    hwaf_khash *k = FROM_NODE(n);

    k->snapshot_ok = k->impl->be->md_fork_prepare(k->be);
}

static void node_parent(hwaf_fork_node *n)
{
    hwaf_khash *k = FROM_NODE(n);

    k->impl->be->md_fork_parent(k->be);
}

static void node_child(hwaf_fork_node *n)
{
    hwaf_khash *k = FROM_NODE(n);

    k->impl->be->md_fork_child(k->be);
    if (!k->snapshot_ok)
        k->broken = 1;
}

void hwaf_khash_attach(hwaf_khash *k, const hwaf_impl *impl, hwaf_be_md *be)
{
    k->impl = impl;
    k->be = be;
    k->node.prepare = node_prepare;
    k->node.parent = node_parent;
    k->node.child = node_child;
    hwaf_fork_register(&k->node);
}

void hwaf_khash_detach(hwaf_khash *k)
{
    k->broken = 0;
    if (k->be == NULL)
        return;
    hwaf_fork_unregister(&k->node);
    k->impl->be->md_close(k->be);
    k->be = NULL;
}

int hwaf_khash_open(hwaf_khash *k, const hwaf_impl *impl, int keyed,
                    const unsigned char *key, size_t keylen, int offload)
{
    hwaf_be_md *be;
    hwaf_open_try t;
    int ok;

    if (k->broken)  /* its state was lost in fork(): start afresh */
        hwaf_khash_detach(k);
    if (k->be != NULL)
        return 1;
    /* short of descriptors a moment ago: software, no open */
    if (hwaf_open_backoff(impl, offload))
        return -1;
    hwaf_open_begin(impl, &t);
    ok = hwaf_open_verify(impl, &t)
         && (keyed ? impl->be->mac_open(&be, impl, key, keylen) : impl->be->md_open(&be, impl));
    if (!ok)  /* out of descriptors, sandboxed or a failed known answer: the
               * message in software */
        return hwaf_open_fallback(impl, &t, offload) ? -1 : 0;
    hwaf_open_end(impl, &t);
    hwaf_khash_attach(k, impl, be);
    return 1;
}

int hwaf_hold_take(hwaf_prov *prov, hwaf_hold *h, size_t t,
                   const unsigned char *in, size_t inl)
{
    if (t == 0 || t == SIZE_MAX || h->held + inl >= t)
        return t == SIZE_MAX ? HWAF_HOLD_SOFTWARE : HWAF_HOLD_KERNEL;
    if (h->held + inl > h->cap) {
        size_t cap = h->cap < 128 ? 256 : 2 * h->cap;
        unsigned char *b;

        if (cap < h->held + inl)
            cap = h->held + inl;
        if (cap > t)
            cap = t;
        if ((b = OPENSSL_malloc(cap)) == NULL) {
            HWAF_RAISE(prov, HWAF_R_MALLOC_FAILURE, NULL);
            return HWAF_HOLD_FAILED;
        }
        if (h->held > 0)
            memcpy(b, h->buf, h->held);
        OPENSSL_cleanse(h->buf, h->held);
        OPENSSL_free(h->buf);
        h->buf = b;
        h->cap = cap;
    }
    if (inl > 0) /* in may be NULL then */
        memcpy(h->buf + h->held, in, inl);
    h->held += inl;
    return HWAF_HOLD_KEPT;
}

void hwaf_hold_clear(hwaf_hold *h)
{
    if (h->held == 0)  /* nothing held (every message in software or the
                        * kernel from its first byte): no call to make */
        return;
    OPENSSL_cleanse(h->buf, h->held);  /* the rest is wiped already */
    h->held = 0;
}

void hwaf_hold_free(hwaf_hold *h)
{
    hwaf_hold_clear(h);
    OPENSSL_free(h->buf);
    h->buf = NULL;
    h->cap = 0;
}

int hwaf_hold_dup(hwaf_prov *prov, hwaf_hold *dst, const hwaf_hold *src)
{
    dst->buf = NULL;
    dst->held = dst->cap = 0;
    if (src->held == 0)
        return 1;
    if ((dst->buf = OPENSSL_memdup(src->buf, src->held)) == NULL) {
        HWAF_RAISE(prov, HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    dst->held = dst->cap = src->held;
    return 1;
}

/*
 * What the digest layer (hwaf_digest.c) and the MAC layer (hwaf_mac.c)
 * share (hwaf_hash.c): the running hash in the kernel with its fork()
 * snapshot, and the bytes of a message held back below the threshold of
 * size-aware dispatch.
 */
#ifndef HWAF_HASH_H
#define HWAF_HASH_H

#include <stddef.h>
#include "hwaf_local.h"

/*
 * A running hash or keyed hash in the kernel (impl's backend), registered
 * for fork(): a snapshot is taken in the parent just before fork() and the
 * child gets it; when the snapshot fails, broken is set in the child, whose
 * state was lost.  attach takes be; detach closes it (nothing when there is
 * none) and clears broken.  A zeroed hwaf_khash has none.
 */
typedef struct hwaf_khash_st {
    const hwaf_impl *impl;   /* whose backend be belongs to */
    hwaf_be_md *be;
    hwaf_fork_node node;
    int snapshot_ok;         /* the last fork snapshot succeeded */
    int broken;              /* its state was lost in fork(): refuse until init */
} hwaf_khash;

void hwaf_khash_attach(hwaf_khash *k, const hwaf_impl *impl, hwaf_be_md *be);
void hwaf_khash_detach(hwaf_khash *k);
/*
 * k ready for a message of impl: a hash whose state was lost in fork() is
 * dropped, and when there is none a new one is opened (keyed: a MAC with
 * key).  1: k->be ready; -1: the message goes to software instead (the
 * implementation backs off after a shortage, or the open failed for want
 * of descriptors or in a sandbox: hwaf_open_fallback, hwaf_soft.h); 0: an
 * error raised.
 */
int hwaf_khash_open(hwaf_khash *k, const hwaf_impl *impl, int keyed,
                    const unsigned char *key, size_t keylen, int offload);

/*
 * The bytes of a message held back while it is undecided (a kernel hash
 * cannot take over a software state).  hwaf_hold_take() takes inl more
 * bytes under threshold t (hwaf_hold_threshold, hwaf_soft.h): HWAF_HOLD_KEPT
 * when they are held back, else the path the message takes from now on
 * (HWAF_HOLD_KERNEL, HWAF_HOLD_SOFTWARE): the caller sends the held bytes
 * there, clears them, then sends in.  HWAF_HOLD_FAILED: out of memory,
 * raised.  The buffer grows by doubling up to t, so a short message never
 * pays for a buffer of the threshold's size; held bytes are wiped when
 * cleared or freed.  A zeroed hwaf_hold is empty.
 */
typedef struct hwaf_hold_st {
    unsigned char *buf;
    size_t held, cap;
} hwaf_hold;

enum { HWAF_HOLD_FAILED = -1, HWAF_HOLD_KEPT, HWAF_HOLD_SOFTWARE, HWAF_HOLD_KERNEL };
int hwaf_hold_take(hwaf_prov *prov, hwaf_hold *h, size_t t,
                   const unsigned char *in, size_t inl);
void hwaf_hold_clear(hwaf_hold *h);
void hwaf_hold_free(hwaf_hold *h);
/* dst (uninitialised) gets a copy of src's held bytes; 1, or 0 raised. */
int hwaf_hold_dup(hwaf_prov *prov, hwaf_hold *dst, const hwaf_hold *src);

#endif

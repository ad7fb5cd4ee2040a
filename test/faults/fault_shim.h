/*
 * A system-call fault injector for the test suite.  fault_shim.c defines
 * the libc functions hwaf calls (socket, bind, setsockopt, accept4, sendmsg,
 * send, read, recv, vmsplice, splice, pipe2, open, ioctl, close, fcntl,
 * mmap when asked, ...)
 * in the test executable, which exports them, so the dynamic linker binds
 * hwaf.so's calls to them; each forwards to libc (dlsym RTLD_NEXT).  Only
 * calls made from hwaf.so itself are counted or failed: libcrypto, the test
 * and other processes (the CUSE /dev/crypto server) are left alone.
 */
#ifndef HWAF_FAULT_SHIM_H
#define HWAF_FAULT_SHIM_H

#ifdef __cplusplus
extern "C" {
#endif

enum fault_kind {
    FAULT_COUNT,   /* only count hwaf's calls */
    FAULT_ERRNO,   /* the call fails with errno = err (close: after closing) */
    FAULT_SHORT    /* read/recv/send/sendmsg/vmsplice/splice do half the work */
};

/* Count hwaf's calls from now on; at the nth (1-based) apply kind/err. */
void fault_arm(unsigned nth, enum fault_kind kind, int err);
/* Stop counting and injecting. */
void fault_disarm(void);
/* hwaf calls counted since fault_arm(). */
unsigned fault_calls(void);
/* Name of the ith (1-based, up to 4096) call counted since fault_arm(). */
const char *fault_call_name(unsigned i);
/* The injected call's name when the fault was applied, else NULL (the nth
 * call never came, or a short fault landed on a call that cannot be short). */
const char *fault_fired(void);
/* On: only hwaf's mmap() calls are counted (and failed), every other call
 * passes uncounted (a GCM context's kept data).  Off, the default: mmap()
 * passes uncounted, which keeps the matrix's cases as they were.  Only
 * mmap itself: a 32-bit build calling mmap64 is not seen. */
void fault_mmap_only(int on);
/* 1 when the shim is bound in place of libc (a self-test of the
 * interposition: hwaf's calls must reach it). */
int fault_shim_active(void);

#ifdef __cplusplus
}
#endif

#endif

/*
 * Ground-floor helpers shared by the system-call layers of both backends
 * (afalg_sys.c, devcrypto_sys.c) and read by the probe.
 */
#ifndef HWAF_SYS_H
#define HWAF_SYS_H

/*
 * A failed system call's errno, turned into the -errno the system-call
 * layers return: `return hwaf_sys_error(errno);`.  Errors that say nothing
 * about the kernel (EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN: the process or
 * the machine is short of something for the moment) are counted per
 * thread, so that the load-time probe can tell a passing shortage from
 * the kernel's answer and does not keep it.
 */
int hwaf_sys_error(int err);
/*
 * The whole of file path (a /proc file: read until end, its size unknown
 * beforehand) into a malloc'd *text of *len bytes: 0, or the errno of what
 * failed (EIO for an empty file), *text then NULL.  Counts nothing.
 */
int hwaf_sys_read_file(const char *path, size_t cap, char **text, size_t *len);
/*
 * The environment variable name, or NULL when the process runs with
 * privileges it was not started with (set-user-ID or set-group-ID, file
 * capabilities: the kernel's AT_SECURE), as OpenSSL reads its own
 * variables (ossl_safe_getenv).  Every HWAF_* variable is read through it:
 * a set-user-ID program's caller must not choose the file hwaf writes its
 * debug log or records to, nor its thresholds or probe inputs.
 */
const char *hwaf_sys_getenv(const char *name);
/* 1 for EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN. */
int hwaf_errno_transient(int err);
/* This thread's count of such errors so far, and the last one. */
unsigned long hwaf_sys_transient_count(void);
int hwaf_sys_transient_errno(void);

/*
 * Descriptors hwaf gave back (a kernel session, hash or AEAD object closed
 * for good), counted for the whole process: a context that found none free
 * tries again once this moves (hwaf_open_backoff in hwaf_soft.h).
 */
void hwaf_sys_fd_released(void);
unsigned long hwaf_sys_fd_releases(void);

/* Bumped in every child after fork() (hwaf_fork.c). */
extern volatile unsigned int hwaf_fork_generation;

#endif

/*
 * hwaf-probe-child: hwaf's first load in a process that has no descriptor
 * to spare, then one, then enough.  Run by ProbeShortage* (kernel_test.cc)
 * as a fresh process (the probe is once per process), which checks what it
 * prints: one line per load, "<step> <backend>: <status>".
 *
 *   hwaf-probe-child MODULE_DIR
 *
 * The module is mapped first (dlopen of the very path OpenSSL will use, so
 * that OpenSSL's own dlopen needs no descriptor); no provider is
 * initialised, so nothing is probed before the descriptor limit is set.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <hwaf/hwaf.h>

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");

    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 3;  /* ".", ".." and the directory's own descriptor */
}

/* Load hwaf in a new library context and print both backends' status. */
static void load(const char *step, const char *dir)
{
    OSSL_LIB_CTX *lib = OSSL_LIB_CTX_new();
    OSSL_PROVIDER *p;
    const char *st[2] = { NULL, NULL };
    OSSL_PARAM params[] = {
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_AFALG_STATUS, (char **)&st[0], 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_DEVCRYPTO_STATUS, (char **)&st[1], 0),
        OSSL_PARAM_END
    };

    if (lib == NULL || !OSSL_PROVIDER_set_default_search_path(lib, dir)) {
        printf("%s error: no library context\n", step);
        return;
    }
    p = OSSL_PROVIDER_load(lib, HWAF_PROVIDER_NAME);
    if (p == NULL) {
        printf("%s error: hwaf did not load: ", step);
        ERR_print_errors_fp(stdout);
        printf("\n");
    } else if (!OSSL_PROVIDER_get_params(p, params) || st[0] == NULL || st[1] == NULL) {
        printf("%s error: no status\n", step);
    } else {
        printf("%s afalg: %s\n%s devcrypto: %s\n", step, st[0], step, st[1]);
    }
    fflush(stdout);
    OSSL_PROVIDER_unload(p);
    OSSL_LIB_CTX_free(lib);
    ERR_clear_error();
}

int main(int argc, char **argv)
{
    char path[4096];
    struct rlimit old, r;
    int n;

    if (argc != 2) {
        fprintf(stderr, "usage: %s MODULE_DIR\n", argv[0]);
        return 2;
    }
    OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
    snprintf(path, sizeof(path), "%s/hwaf.so", argv[1]);
    if (dlopen(path, RTLD_NOW | RTLD_GLOBAL) == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return 2;
    }
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    printf("start\n");  /* stdout's buffer exists before the limit */
    if (getrlimit(RLIMIT_NOFILE, &old) != 0)
        return 2;
    n = open_fds();
    r = old;
    r.rlim_cur = (rlim_t)n;         /* no descriptor free */
    if (setrlimit(RLIMIT_NOFILE, &r) != 0)
        return 2;
    load("none-free", argv[1]);
    r.rlim_cur = (rlim_t)n + 1;     /* one free */
    setrlimit(RLIMIT_NOFILE, &r);
    load("one-free", argv[1]);
    setrlimit(RLIMIT_NOFILE, &old);
    load("enough", argv[1]);
    return 0;
}

/* The module's only exported symbol. */
#include <openssl/core.h>
#include "hwaf_local.h"

__attribute__((visibility("default")))
OSSL_provider_init_fn OSSL_provider_init;

int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                       const OSSL_DISPATCH **out, void **provctx)
{
    return hwaf_provider_init(handle, in, out, provctx);
}

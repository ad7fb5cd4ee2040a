/* Builds without the /dev/crypto backend: it reports itself unusable. */
#include <stdio.h>
#include "hwaf_backend.h"

static int none_available(char *why, size_t whylen)
{
    snprintf(why, whylen, "this build has no /dev/crypto backend");
    return 0;
}

const hwaf_backend hwaf_backend_devcrypto = { "devcrypto", none_available };

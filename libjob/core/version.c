#include "config.h"
#include "ddp.h"

const char *ddp_version (void)
{
    return PACKAGE_VERSION;
}

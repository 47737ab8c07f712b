/* version.c - the library reports the version configure was given. */
#include "config.h"
#include <string.h>
#include "ddp.h"
#include "tap.h"

int main (void)
{
    plan (2);
    ok (ddp_version () != NULL, "ddp_version() is not NULL");
    is_str (ddp_version (), PACKAGE_VERSION, "ddp_version() matches the package");
    return done_testing ();
}

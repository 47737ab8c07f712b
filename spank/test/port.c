/* port.c - MASTER_PORT derivation (spank/sp_port.c). */
#include "config.h"
#include <errno.h>
#include <stdbool.h>
#include "sp_port.h"
#include "tap.h"

int main (void)
{
    bool inrange = true, distinct = true, spread = false;
    int p0, p, i, seen[100] = { 0 };
    uint32_t s;

    p0 = sp_port_derive (1234, 0, 29500, 29999);
    ok (p0 >= 29500 && p0 <= 29999, "port of step 0 is in the range (%d)", p0);
    is_int (sp_port_derive (1234, 0, 29500, 29999), p0,
            "the same job and step give the same port (every node agrees)");
    ok (sp_port_derive (1234, 1, 29500, 29999) != p0,
        "the next step of the same job gets another port");

    /* 100 steps of one job in a 100-port range: all distinct. */
    for (s = 0; s < 100; s++) {
        p = sp_port_derive (987654, s, 40000, 40099);
        if (p < 40000 || p > 40099)
            inrange = false;
        else if (seen[p - 40000]++)
            distinct = false;
    }
    ok (inrange, "100 steps stay inside a 100-port range");
    ok (distinct, "100 concurrent steps of one job get 100 distinct ports");

    for (i = 1; i < 20; i++) {
        if (sp_port_derive ((uint32_t) i, 0, 29500, 29999)
            != sp_port_derive ((uint32_t) i + 1, 0, 29500, 29999) - 1)
            spread = true;
    }
    ok (spread, "neighbouring job ids are spread over the range");

    is_int (sp_port_derive (5, 7, 6000, 6000), 6000,
            "a one-port range always gives that port");
    ok (sp_port_derive (0xffffffffU, 0xfffffffbU, 1, 65535) >= 1,
        "the largest job and step ids stay in range");
    errno = 0;
    ok (sp_port_derive (1, 0, 0, 10) == -1 && errno == EINVAL,
        "a range starting at 0 is EINVAL");
    errno = 0;
    ok (sp_port_derive (1, 0, 20, 10) == -1 && errno == EINVAL,
        "LO > HI is EINVAL");
    errno = 0;
    ok (sp_port_derive (1, 0, 10, 65536) == -1 && errno == EINVAL,
        "HI > 65535 is EINVAL");
    return done_testing ();
}

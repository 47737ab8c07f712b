/* fuzz-sources: libjob/bootstrap/rollcall.c libjob/common/util.c libjob/common/env.c libjob/common/ifsel.c */
/* fuzz_rollcall.c - the roll call's wire messages (libjob/bootstrap/rollcall.h),
 * which a hub on MASTER_PORT reads from whoever connects: a report
 * (ddpi_report_len, ddpi_report_add) and an answer (ddpi_answer_parse).
 *
 * Input: byte 0 picks the message (even: report, odd: answer), the rest is
 * the message.  A report is accepted only when its length is the one its
 * header announces, and then every rank in the tally is in range with a
 * known state and the node is counted heard; a refused one leaves the
 * tally as it was.  An accepted answer has counts in [0, size], lists of
 * min(count, ROLLCALL_LIST_MAX) ranks, every one in range. */
#include "config.h"

#include "fuzz.h"
#include "ddp_internal.h"
#include "rollcall.h"

#define TAG 0x5eed5eed5eed5eedULL
#define SIZE 16
#define NODES 4

/* util.c's messages name the error code; the fuzzer links no core. */
__attribute__ ((weak)) const char *ddp_strerror (int err)
{
    (void) err;
    return "error";
}

static void report (const uint8_t *data, size_t size)
{
    struct ddpi_tally t;
    uint8_t before[SIZE];
    int nheard, r, rc;
    size_t want = 0;
    void *buf = malloc (size ? size : 1);   /* exact size for ASan */

    if (!buf || ddpi_tally_init (&t, SIZE, NODES) < 0)
        abort ();
    memcpy (buf, data, size);
    if (size >= ROLLCALL_REPORT_HDR)
        want = ddpi_report_len (buf, TAG);
    memcpy (before, t.state, SIZE);
    nheard = t.nheard;
    rc = ddpi_report_add (&t, TAG, buf, size);
    if (rc == 0) {
        fuzz_assert (want == size);
        fuzz_assert (t.nheard == nheard + 1);
        for (r = 0; r < SIZE; r++)
            fuzz_assert (t.state[r] <= RANK_MISSING);
        fuzz_assert (ddpi_tally_list (&t, RANK_UNHEARD, NULL, 0) < SIZE);
    }
    else {
        fuzz_assert (rc == -1);
        fuzz_assert (t.nheard == nheard);
        fuzz_assert (memcmp (before, t.state, SIZE) == 0);
    }
    ddpi_tally_free (&t);
    free (buf);
}

static void answer (const uint8_t *data, size_t size)
{
    struct ddpi_rollcall out;
    void *buf = malloc (size ? size : 1);
    int i;

    if (!buf)
        abort ();
    memcpy (buf, data, size);
    if (ddpi_answer_parse (buf, size, TAG, SIZE, &out) == 0) {
        fuzz_assert (out.nmissing >= 0 && out.nmissing <= SIZE);
        fuzz_assert (out.nunheard >= 0 && out.nunheard <= SIZE);
        fuzz_assert (out.nmissing_listed == (out.nmissing < ROLLCALL_LIST_MAX
                                             ? out.nmissing
                                             : ROLLCALL_LIST_MAX));
        fuzz_assert (out.nunheard_listed == (out.nunheard < ROLLCALL_LIST_MAX
                                             ? out.nunheard
                                             : ROLLCALL_LIST_MAX));
        for (i = 0; i < out.nmissing_listed; i++)
            fuzz_assert (out.missing[i] >= 0 && out.missing[i] < SIZE);
        for (i = 0; i < out.nunheard_listed; i++)
            fuzz_assert (out.unheard[i] >= 0 && out.unheard[i] < SIZE);
    }
    free (buf);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] % 2 == 0)
        report (data + 1, size - 1);
    else
        answer (data + 1, size - 1);
    return 0;
}

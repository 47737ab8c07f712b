/* fuzz-sources: spank/sp_gpus.c spank/sp_option.c spank/sp_err.c */
/* fuzz_gpus.c - GPU lists from the job environment (CUDA_VISIBLE_DEVICES)
 * and the per-task GPU choice (sp_gpus_count, sp_gpus_pick, sp_gpus_choose).
 *
 * Input: 5 bytes of task description (buffer size, local rank and the
 * busiest node's tasks, local tasks, wanted backend, binding, auto rule,
 * driver, whether the list is the task's or (--gpu-bind=none) the step's,
 * GPUs on the node), then the list.  Checked
 * against an independent tokenizer: the count, every token picked, ERANGE
 * past the end, ENOSPC when the buffer is short; a choice never binds a GPU
 * outside the list (with the node's GPU count unknown: exactly the one at the
 * local rank), never fails silently, and leaves *out alone on failure; auto
 * gives nccl only with a driver and a GPU per local task; a share kept whole
 * is a task's own list of several, smaller than the node's; the step's list
 * stands in only for a task without one, when its count is the node's. */
#include "config.h"
#include <errno.h>
#include <stdbool.h>

#include "fuzz.h"
#include "sp_gpus.h"

#define MAXTOK 64

static bool tokc (char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'
        || c == ':' || c == '/';
}

/* Reference: the token count (-1 if malformed); starts/lengths of the first
 * MAXTOK tokens. */
static int reference (const char *s, const char **tok, size_t *tlen)
{
    int n = 0;

    if (strlen (s) > SP_GPU_LIST_MAXLEN)
        return -1;
    if (*s == '\0')
        return 0;
    for (;;) {
        size_t k = 0;
        while (tokc (s[k]))
            k++;
        if (k == 0 || k > SP_GPU_TOKEN_MAX || (s[k] != ',' && s[k] != '\0'))
            return -1;
        if (n < MAXTOK) {
            tok[n] = s;
            tlen[n] = k;
        }
        n++;
        if (s[k] == '\0')
            return n;
        s += k + 1;
    }
}

static bool is_token (const char *g, const char **tok, const size_t *tlen,
                      int n)
{
    int i;

    for (i = 0; i < n && i < MAXTOK; i++)
        if (strlen (g) == tlen[i] && strncmp (g, tok[i], tlen[i]) == 0)
            return true;
    return false;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const char *tok[MAXTOK];
    size_t tlen[MAXTOK], len;
    struct sp_task_gpus in;
    struct sp_task_choice out, poison;
    char *s, *buf, err[256];
    int n, ref, rc;
    unsigned i;
    bool from_step;

    if (size < 5)
        return 0;
    len = data[0];
    s = fuzz_cstr (data + 5, size - 5);
    buf = malloc (len ? len : 1);
    if (!buf)
        abort ();
    ref = reference (s, tok, tlen);
    n = sp_gpus_count (s);
    fuzz_assert (n == ref);

    for (i = 0; ref >= 0 && i <= (unsigned) ref && i < MAXTOK; i++) {
        errno = 0;
        rc = sp_gpus_pick (s, i, len ? buf : NULL, len);
        if (len == 0)
            fuzz_assert (rc == -1 && errno == EINVAL);
        else if (i == (unsigned) ref)
            fuzz_assert (rc == -1 && errno == ERANGE);
        else if (tlen[i] >= len)
            fuzz_assert (rc == -1 && errno == ENOSPC);
        else
            fuzz_assert (rc == 0 && strlen (buf) == tlen[i]
                         && strncmp (buf, tok[i], tlen[i]) == 0);
    }
    if (ref < 0)
        fuzz_assert (sp_gpus_pick (s, 0, buf, len ? len : 1) == -1);

    memset (&in, 0, sizeof (in));
    in.visible = (data[3] & 0xc0) ? NULL : s;
    in.step_visible = (data[3] & 0x40) ? s : NULL;
    in.bind_none = (data[3] & 0x40) != 0;
    in.rule = (enum sp_auto_rule) ((data[3] >> 3) & 3);
    in.driver = (data[3] & 0x20) != 0;
    in.max_local_tasks = data[1] >> 4;
    in.local_rank = data[1] % 16;
    in.local_tasks = data[2] % 16;
    in.want = (enum sp_backend) (data[3] & 3);
    in.bind = (data[3] & 4) != 0;
    in.gpus_on_node = (int) (int8_t) data[4];
    if (in.gpus_on_node < -1)
        in.gpus_on_node = -1;
    memset (&poison, 0x5a, sizeof (poison));
    out = poison;
    memset (err, 'X', sizeof (err));
    rc = sp_gpus_choose (&in, &out, err, sizeof (err));
    n = in.visible ? ref : 0;
    from_step = in.step_visible && ref > 0 && ref == in.gpus_on_node;
    if (from_step)
        n = ref;
    if (n < 0 || (in.want == SP_BACKEND_NCCL && n == 0))
        fuzz_assert (rc == -1);
    if (rc == 0) {
        fuzz_assert (in.local_tasks > 0 && in.local_rank < in.local_tasks);
        fuzz_assert (in.want != SP_BACKEND_OFF);
        fuzz_assert (n >= 0);
        fuzz_assert (out.backend == SP_BACKEND_HOST
                     || out.backend == SP_BACKEND_NCCL);
        if (in.want == SP_BACKEND_HOST)
            fuzz_assert (out.backend == SP_BACKEND_HOST);
        if (in.want == SP_BACKEND_NCCL)
            fuzz_assert (out.backend == SP_BACKEND_NCCL && n > 0);
        if (in.want == SP_BACKEND_AUTO && out.backend == SP_BACKEND_NCCL)
            fuzz_assert (in.driver && n > 0 && in.rule != SP_AUTO_HOST);
        if (in.want == SP_BACKEND_AUTO && in.rule == SP_AUTO_NCCL)
            fuzz_assert (out.backend == SP_BACKEND_NCCL);
        fuzz_assert (!(out.bound && out.share));
        fuzz_assert (out.step_list == (from_step && !out.bound));
        fuzz_assert (out.unlisted == (n == 0 && in.gpus_on_node > 0));
        if (out.share)
            fuzz_assert (in.bind && !from_step && n > 1
                         && in.gpus_on_node > n);
        if (out.bound) {
            fuzz_assert (in.bind && n > 0);
            fuzz_assert (is_token (out.gpu, tok, tlen, n) || n > MAXTOK);
            if (in.gpus_on_node < 0 && (int) in.local_rank < MAXTOK)
                fuzz_assert (strlen (out.gpu) == tlen[in.local_rank]
                             && !strncmp (out.gpu, tok[in.local_rank],
                                          tlen[in.local_rank]));
        }
        else if (!out.share)
            fuzz_assert (!in.bind || n == 0 || n < (int) in.local_tasks);
    }
    else {
        fuzz_assert (rc == -1 && errno == EINVAL);
        fuzz_assert (memcmp (&out, &poison, sizeof (out)) == 0);
        fuzz_assert (fuzz_terminated (err, sizeof (err)) && err[0] != 'X');
        fuzz_assert (n < 0 || in.local_tasks == 0
                     || in.local_rank >= in.local_tasks
                     || in.want == SP_BACKEND_OFF
                     || in.want == SP_BACKEND_NCCL
                     || (in.want == SP_BACKEND_AUTO
                         && in.rule != SP_AUTO_HOST));
    }
    free (buf);
    free (s);
    return 0;
}

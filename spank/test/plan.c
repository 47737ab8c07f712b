/* plan.c - one backend for the whole step under --ddp=auto
 * (spank/sp_plan.c). */
#include "config.h"
#include <errno.h>
#include "sp_plan.h"
#include "tap.h"

/* Classify O; is it class GPUS with PER_NODE? */
static void classify (struct sp_gpu_opts o, enum sp_gpureq gpus,
                      unsigned per_node, const char *what)
{
    struct sp_plan p = { .gpus = SP_GPUREQ_NONE, .per_node = 99 };

    sp_plan_classify (&o, &p);
    ok (p.gpus == gpus && p.per_node == per_node, "%s", what);
    if (p.gpus != gpus || p.per_node != per_node)
        diag ("  got class %d, per node %u", (int) p.gpus, p.per_node);
}

static void test_classify (void)
{
    const enum sp_gpureq I = SP_GPUREQ_INHERIT, Z = SP_GPUREQ_NONE,
                         T = SP_GPUREQ_PER_TASK, N = SP_GPUREQ_PER_NODE,
                         O = SP_GPUREQ_OTHER;
    struct sp_plan p;

    classify ((struct sp_gpu_opts) { 0 }, I, 0, "no GPU option: inherit");
    classify ((struct sp_gpu_opts) { .gpus_per_task = "1" }, T, 0,
              "--gpus-per-task=1");
    classify ((struct sp_gpu_opts) { .gpus_per_task = "a100:2",
                                     .gpus_per_node = "1" }, T, 0,
              "--gpus-per-task=a100:2 wins over a node count");
    classify ((struct sp_gpu_opts) { .gpus_per_task = "0" }, I, 0,
              "--gpus-per-task=0 asks for nothing");
    classify ((struct sp_gpu_opts) { .gpus_per_task = "x" }, O, 0,
              "an unreadable --gpus-per-task: other");
    classify ((struct sp_gpu_opts) { .gpus_per_node = "4" }, N, 4,
              "--gpus-per-node=4");
    classify ((struct sp_gpu_opts) { .gpus_per_node = "tesla:2" }, N, 2,
              "--gpus-per-node=tesla:2");
    classify ((struct sp_gpu_opts) { .gpus_per_node = "0" }, Z, 0,
              "--gpus-per-node=0: none");
    classify ((struct sp_gpu_opts) { .gpus_per_node = ":2" }, O, 0,
              "--gpus-per-node=:2: other");
    classify ((struct sp_gpu_opts) { .gres = "gpu:2" }, N, 2, "--gres=gpu:2");
    classify ((struct sp_gpu_opts) { .gres = "gpu" }, N, 1,
              "--gres=gpu is one");
    classify ((struct sp_gpu_opts) { .gres = "gpu:a100" }, N, 1,
              "--gres=gpu:a100 is one");
    classify ((struct sp_gpu_opts) { .gres = "gpu:a100:3" }, N, 3,
              "--gres=gpu:a100:3");
    classify ((struct sp_gpu_opts) { .gres = "gpu:a100:1,gpu:v100:2" }, N, 3,
              "two GPU types add up");
    classify ((struct sp_gpu_opts) { .gres = "none" }, Z, 0, "--gres=none");
    classify ((struct sp_gpu_opts) { .gres = "gpu:0" }, Z, 0, "--gres=gpu:0");
    classify ((struct sp_gpu_opts) { .gres = "nic:1" }, O, 0,
              "another gres: other");
    classify ((struct sp_gpu_opts) { .gres = "gpu:2,nic:1" }, O, 0,
              "GPUs and another gres: other");
    classify ((struct sp_gpu_opts) { .gres = "gpu:2k" }, O, 0,
              "a count with a suffix: other");
    classify ((struct sp_gpu_opts) { .gres = "gpu:a:b:2" }, O, 0,
              "four fields: other");
    classify ((struct sp_gpu_opts) { .gres = "gpu:a100:x" }, O, 0,
              "gpu:TYPE:TYPE: other");
    classify ((struct sp_gpu_opts) { .gres = "gpu::2" }, O, 0,
              "an empty field: other");
    classify ((struct sp_gpu_opts) { .gres = ":gpu:2" }, O, 0,
              "a leading colon: other");
    classify ((struct sp_gpu_opts) { .gres = "gpu:2," }, O, 0,
              "an empty entry: other");
    classify ((struct sp_gpu_opts) { .gres = "gpu;2" }, O, 0,
              "a stray character: other");
    classify ((struct sp_gpu_opts) { .gres = "gpu:2", .gpus_per_node = "2" },
              O, 0, "--gres and --gpus-per-node together: other");
    classify ((struct sp_gpu_opts) { .gpus = "4" }, O, 0, "--gpus=4: other");
    classify ((struct sp_gpu_opts) { .gpus_per_socket = "1" }, O, 0,
              "--gpus-per-socket: other");
    classify ((struct sp_gpu_opts) { .ntasks_per_gpu = "2",
                                     .gpus_per_node = "2" }, O, 0,
              "--ntasks-per-gpu: other");
    classify ((struct sp_gpu_opts) { .gpus_per_node = "2", .unsure = true },
              O, 0, "an abbreviated GPU option: other");
    p.gpus = SP_GPUREQ_OTHER;
    sp_plan_classify (NULL, &p);
    ok (p.gpus == SP_GPUREQ_INHERIT, "no options at all: inherit");
    sp_plan_classify (NULL, NULL);
    ok (1, "a NULL plan is ignored");
}

static void roundtrip (struct sp_plan p, const char *text)
{
    char buf[SP_PLAN_MAXLEN + 1];
    struct sp_plan q = { .gpus = SP_GPUREQ_OTHER, .per_node = 7 };

    ok (sp_plan_format (&p, buf, sizeof (buf)) == 0 && !strcmp (buf, text)
        && sp_plan_parse (buf, &q) == 0 && q.gpus == p.gpus
        && q.per_node == p.per_node && q.kill_set == p.kill_set,
        "plan '%s' is written and read back", text);
}

static void bad_text (const char *s)
{
    struct sp_plan q = { .gpus = SP_GPUREQ_OTHER, .per_node = 7 };

    errno = 0;
    ok (sp_plan_parse (s, &q) == -1 && errno == EINVAL
        && q.gpus == SP_GPUREQ_OTHER && q.per_node == 7,
        "'%s' is not a plan", s ? s : "(null)");
}

static void test_text (void)
{
    struct sp_plan p = { .gpus = SP_GPUREQ_PER_NODE, .per_node = 0 };
    char buf[8];

    roundtrip ((struct sp_plan) { SP_GPUREQ_INHERIT, 0, false }, "inherit");
    roundtrip ((struct sp_plan) { SP_GPUREQ_NONE, 0, true }, "none,kill");
    roundtrip ((struct sp_plan) { SP_GPUREQ_PER_TASK, 0, false }, "per-task");
    roundtrip ((struct sp_plan) { SP_GPUREQ_PER_NODE, 65535, true },
               "per-node:65535,kill");
    roundtrip ((struct sp_plan) { SP_GPUREQ_OTHER, 0, false }, "other");
    bad_text (NULL);
    bad_text ("");
    bad_text ("Inherit");
    bad_text ("per-node");
    bad_text ("per-node:0");
    bad_text ("per-node:65536");
    bad_text ("per-node:+2");
    bad_text ("per-node:06");
    bad_text ("per-task:2");
    bad_text ("inherit,");
    bad_text ("inherit,kil");
    bad_text ("inherit,kill,kill");
    bad_text ("inherit kill");
    bad_text ("per-node:2x");
    errno = 0;
    ok (sp_plan_format (&p, buf, sizeof (buf)) == -1 && errno == EINVAL,
        "per-node with no count cannot be written");
    p.per_node = 12;
    p.kill_set = true;
    errno = 0;
    ok (sp_plan_format (&p, buf, 8) == -1 && errno == ENOSPC,
        "a small buffer is ENOSPC");
    p.gpus = (enum sp_gpureq) 9;
    ok (sp_plan_format (&p, buf, sizeof (buf)) == -1, "a bad class fails");
    ok (sp_plan_parse ("inherit", NULL) == -1, "a NULL plan fails");
}

static void test_rule (void)
{
    struct sp_plan p = { 0 };

    ok (sp_plan_rule (&p, 4) == SP_AUTO_UNIFORM, "inherit: uniform");
    p.gpus = SP_GPUREQ_PER_TASK;
    ok (sp_plan_rule (&p, 8) == SP_AUTO_NCCL, "per task: nccl");
    p.gpus = SP_GPUREQ_PER_NODE;
    p.per_node = 2;
    ok (sp_plan_rule (&p, 2) == SP_AUTO_NCCL,
        "2 per node, 2 tasks on the busiest node: nccl");
    ok (sp_plan_rule (&p, 3) == SP_AUTO_HOST,
        "2 per node, 3 tasks on the busiest node: host (the -N2 -n3 case)");
    p.gpus = SP_GPUREQ_NONE;
    ok (sp_plan_rule (&p, 1) == SP_AUTO_HOST, "none: host");
    p.gpus = SP_GPUREQ_OTHER;
    ok (sp_plan_rule (&p, 1) == SP_AUTO_EACH, "other: each node or refuse");
    ok (sp_plan_rule (NULL, 1) == SP_AUTO_UNIFORM, "no plan: uniform");
    ok (strstr (sp_plan_reason (&p), "--gpus") != NULL,
        "the reason for other names --gpus");
    ok (sp_plan_reason (NULL) != NULL, "a reason even without a plan");
}

int main (void)
{
    test_classify ();
    test_text ();
    test_rule ();
    return done_testing ();
}

/* plan.c - one backend for the whole step under --ddp=auto
 * (spank/sp_plan.c). */
#include "config.h"
#include <errno.h>
#include "sp_plan.h"
#include "tap.h"

/* One classification: options O give class GPUS with PER_NODE. */
struct class_case {
    struct sp_gpu_opts o;
    enum sp_gpureq gpus;
    unsigned per_node;
    const char *what;
};

static void test_classify (void)
{
    const enum sp_gpureq I = SP_GPUREQ_INHERIT, Z = SP_GPUREQ_NONE,
                         T = SP_GPUREQ_PER_TASK, N = SP_GPUREQ_PER_NODE,
                         O = SP_GPUREQ_OTHER;
    const struct class_case cases[] = {
        { { 0 }, I, 0, "no GPU option: inherit" },
        { { .gpus_per_task = "1" }, T, 0, "--gpus-per-task=1" },
        { { .gpus_per_task = "a100:2", .gpus_per_node = "1" }, T, 0,
          "--gpus-per-task=a100:2 wins over a node count" },
        { { .gpus_per_task = "0" }, I, 0, "--gpus-per-task=0 asks for nothing" },
        { { .gpus_per_task = "x" }, O, 0, "an unreadable --gpus-per-task" },
        { { .gpus_per_node = "4" }, N, 4, "--gpus-per-node=4" },
        { { .gpus_per_node = "tesla:2" }, N, 2, "--gpus-per-node=tesla:2" },
        { { .gpus_per_node = "0" }, Z, 0, "--gpus-per-node=0: none" },
        { { .gpus_per_node = ":2" }, O, 0, "--gpus-per-node=:2" },
        { { .gres = "gpu:2" }, N, 2, "--gres=gpu:2" },
        { { .gres = "gpu" }, N, 1, "--gres=gpu is one" },
        { { .gres = "gpu:a100" }, N, 1, "--gres=gpu:a100 is one" },
        { { .gres = "gpu:a100:3" }, N, 3, "--gres=gpu:a100:3" },
        { { .gres = "gpu:a100:1,gpu:v100:2" }, N, 3, "two GPU types add up" },
        { { .gres = "none" }, Z, 0, "--gres=none" },
        { { .gres = "gpu:0" }, Z, 0, "--gres=gpu:0" },
        { { .gres = "nic:1" }, O, 0, "another gres" },
        { { .gres = "gpu:2,nic:1" }, O, 0, "GPUs and another gres" },
        { { .gres = "gpu:2k" }, O, 0, "a count with a suffix" },
        { { .gres = "gpu:a:b:2" }, O, 0, "four fields" },
        { { .gres = "gpu:a100:x" }, O, 0, "gpu:TYPE:TYPE" },
        { { .gres = "gpu::2" }, O, 0, "an empty field" },
        { { .gres = ":gpu:2" }, O, 0, "a leading colon" },
        { { .gres = "gpu:2," }, O, 0, "an empty entry" },
        { { .gres = "gpu;2" }, O, 0, "a stray character" },
        { { .gres = "gpu:2", .gpus_per_node = "2" }, O, 0,
          "--gres and --gpus-per-node together" },
        { { .gpus = "4" }, O, 0, "--gpus=4" },
        { { .gpus_per_socket = "1" }, O, 0, "--gpus-per-socket" },
        { { .ntasks_per_gpu = "2", .gpus_per_node = "2" }, O, 0,
          "--ntasks-per-gpu" },
        { { .gpus_per_node = "2", .unsure = true }, O, 0,
          "an abbreviated GPU option" },
    };
    struct sp_plan p;
    size_t i;

    for (i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
        p = (struct sp_plan) { .gpus = SP_GPUREQ_NONE, .per_node = 99 };
        sp_plan_classify (&cases[i].o, &p);
        ok (p.gpus == cases[i].gpus && p.per_node == cases[i].per_node,
            "%s: class %d, %u per node", cases[i].what, (int) cases[i].gpus,
            cases[i].per_node);
        if (p.gpus != cases[i].gpus || p.per_node != cases[i].per_node)
            diag ("  got class %d, per node %u", (int) p.gpus, p.per_node);
    }
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

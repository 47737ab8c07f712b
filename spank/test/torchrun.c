/* torchrun.c - recognising a step whose command is torchrun
 * (spank/sp_torchrun.c). */
#include "config.h"
#include "sp_torchrun.h"
#include "tap.h"
#include "words.h"

static void is_torchrun (char **w, bool want)
{
    int i;
    char what[160] = "";

    for (i = 0; w[i] && strlen (what) < 100; i++) {
        strcat (what, w[i]);
        strcat (what, " ");
    }
    ok (sp_cmd_is_torchrun (nwords (w), w) == want, "%s%s torchrun", what,
        want ? "is" : "is not");
}

int main (void)
{
    is_torchrun (WORDS ("torchrun", "--nproc-per-node=4", "t.py"), true);
    is_torchrun (WORDS ("/opt/venv/bin/torchrun", "t.py"), true);
    is_torchrun (WORDS ("python3", "-m", "torch.distributed.run", "t.py"),
                 true);
    is_torchrun (WORDS ("python", "-m", "torch.distributed.launch", "t.py"),
                 true);
    is_torchrun (WORDS ("/usr/bin/python3.11", "-u", "-m",
                        "torch.distributed.run", "t.py"), true);
    is_torchrun (WORDS ("python3", "-um", "torch.distributed.run"), true);
    is_torchrun (WORDS ("python3", "-mtorch.distributed.run"), true);
    is_torchrun (WORDS ("python3", "-W", "ignore", "-m",
                        "torch.distributed.run"), true);
    is_torchrun (WORDS ("python3", "t.py", "-m", "torch.distributed.run"),
                 false);
    is_torchrun (WORDS ("python3", "-c", "import x", "-m",
                        "torch.distributed.run"), false);
    is_torchrun (WORDS ("python3", "-m", "torch.distributed"), false);
    is_torchrun (WORDS ("python3", "-m"), false);
    is_torchrun (WORDS ("python3", "--", "-m", "torch.distributed.run"),
                 false);
    is_torchrun (WORDS ("pythonista", "-m", "torch.distributed.run"), false);
    is_torchrun (WORDS ("torchrun2", "t.py"), false);
    is_torchrun (WORDS ("sh", "-c", "torchrun t.py"), false);
    is_torchrun (WORDS ("./train"), false);
    ok (!sp_cmd_is_torchrun (0, NULL), "no command: not torchrun");
    ok (!sp_cmd_is_torchrun (1, WORDS ("")), "an empty word: not torchrun");
    return done_testing ();
}

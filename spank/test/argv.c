/* argv.c - srun's own command line, read before srun parses it
 * (spank/sp_argv.c). */
#include "config.h"
#include <errno.h>
#include "sp_argv.h"
#include "tap.h"
#include "words.h"

/* Run sp_argv_find for --ddp on ARGV. */
static int find (const char **value, char **argv)
{
    *value = "unset";
    return sp_argv_find (nwords (argv), argv, "ddp", value);
}

static void test_find (void)
{
    const char *v;
    char *argv[] = { "srun", NULL };

    ok (find (&v, WORDS ("srun", "--ddp", "prog")) == 1 && v == NULL,
        "bare --ddp is found with no value");
    ok (find (&v, WORDS ("srun", "--ddp=nccl", "prog")) == 1
        && strcmp (v, "nccl") == 0, "--ddp=nccl is found with its value");
    ok (find (&v, WORDS ("srun", "-N2", "-n", "4", "--ddp=host", "prog"))
        == 1 && strcmp (v, "host") == 0, "found after short options with arguments");
    ok (find (&v, WORDS ("srun", "--partition", "debug", "--ddp", "prog"))
        == 1,
        "found after a long option with a separate argument");
    ok (find (&v, WORDS ("srun", "--ddp=host", "--ddp=off", "prog")) == 1
        && strcmp (v, "off") == 0, "the last --ddp wins");
    ok (find (&v, WORDS ("srun", "--dd=host", "prog")) == 1
        && strcmp (v, "host") == 0, "an abbreviation (--dd) is found");
    ok (find (&v, WORDS ("srun", "--ddp", "host", "prog")) == 1 && v == NULL,
        "the word after a bare --ddp is not its value");
    ok (find (&v, WORDS ("srun", "-N2", "prog", "--ddp")) == 0,
        "--ddp after the command belongs to the command");
    ok (find (&v, WORDS ("srun", "--exclusive", "prog", "--ddp")) == 0,
        "a flag option does not swallow the command");
    ok (find (&v, WORDS ("srun", "-l", "prog", "--ddp")) == 0,
        "a short flag does not swallow the command");
    ok (find (&v, WORDS ("srun", "-lN", "2", "prog", "--ddp")) == 0,
        "a short cluster ending in an option with argument takes the next word");
    ok (find (&v, WORDS ("srun", "-B", "2:4", "--ddp", "prog")) == 1,
        "-B takes the next word (found after it)");
    ok (find (&v, WORDS ("srun", "-w", "n1", "-t", "5", "-J", "x", "--ddp",
                         "prog")) == 1,
        "found after several short options with arguments");
    ok (find (&v, WORDS ("srun", "--lab", "--ddp=host", "prog")) == 0,
        "an abbreviated flag (--lab) is taken to swallow the next word "
        "(the scan's known limit)");
    ok (find (&v, WORDS ("srun", "--", "--ddp")) == 0,
        "nothing after -- is srun's");
    ok (find (&v, WORDS ("srun", "-", "--ddp")) == 0, "'-' is a command word");
    ok (find (&v, WORDS ("srun", "--d", "prog")) == 0,
        "a one-letter abbreviation is not --ddp");
    ok (find (&v, WORDS ("srun", "--ddpx", "prog")) == 0,
        "a longer option name is not --ddp");
    ok (find (&v, WORDS ("srun", "--mpi=pmix", "prog")) == 0,
        "other options are not --ddp");
    ok (find (&v, WORDS ("srun")) == 0, "srun alone: not found");
    ok (sp_argv_find (1, argv, "ddp", &v) == 0, "argc 1: not found");
    errno = 0;
    ok (sp_argv_find (1, NULL, "ddp", &v) == -1 && errno == EINVAL,
        "NULL argv is EINVAL");
    errno = 0;
    ok (sp_argv_find (1, argv, "", &v) == -1 && errno == EINVAL,
        "an empty name is EINVAL");
    errno = 0;
    ok (sp_argv_find (1, argv, "ddp", NULL) == -1 && errno == EINVAL,
        "a NULL value pointer is EINVAL");
}

/* sp_argv_value for NAME (LETTER) on ARGV; "-" when absent. */
static const char *value (char **argv, const char *name, char letter)
{
    const char *v = NULL;
    int rc = sp_argv_value (nwords (argv), argv, name, letter, &v);

    if (rc < 0)
        return "(error)";
    return rc == 1 ? (v ? v : "(null)") : "-";
}

static void test_value (void)
{
    const char *v;

    is_str (value (WORDS ("srun", "--gres=gpu:2", "p"), "gres", 0), "gpu:2",
            "--gres=gpu:2");
    is_str (value (WORDS ("srun", "--gres", "gpu:2", "p"), "gres", 0),
            "gpu:2", "--gres gpu:2 (separate word)");
    is_str (value (WORDS ("srun", "--gres=gpu:1", "--gres=gpu:3", "p"), "gres",
                   0), "gpu:3", "the last one wins");
    is_str (value (WORDS ("srun", "--gres-flags=enforce-binding", "p"),
                   "gres", 0), "-", "--gres-flags is not --gres");
    is_str (value (WORDS ("srun", "--gpus=4", "p"), "gpus-per-node", 0), "-",
            "--gpus is not --gpus-per-node");
    is_str (value (WORDS ("srun", "--gpus-per-node=2", "p"), "gpus", 'G'), "-",
            "--gpus-per-node is not --gpus");
    is_str (value (WORDS ("srun", "-G", "3", "p"), "gpus", 'G'), "3",
            "-G 3");
    is_str (value (WORDS ("srun", "-lG3", "p"), "gpus", 'G'), "3",
            "-lG3 (in a cluster)");
    is_str (value (WORDS ("srun", "-n2", "p", "--gpus=2"), "gpus", 'G'), "-",
            "after the command: not srun's");
    is_str (value (WORDS ("srun", "--mpi", "pmi2", "p"), "mpi", 0), "pmi2",
            "--mpi pmi2");
    is_str (value (WORDS ("srun", "--gres"), "gres", 0), "(null)",
            "--gres at the end has no value");
    ok (sp_argv_value (1, NULL, "gres", 0, &v) == -1, "NULL argv fails");
    ok (sp_argv_value (1, WORDS ("srun"), "gres", 0, NULL) == -1,
        "NULL value pointer fails");
}

static const char *const gpu[] = { "gpus", "gpus-per-node", "gres",
                                   "ntasks-per-gpu", NULL };

static bool abbrev (char **w)
{
    return sp_argv_abbreviates (nwords (w), w, gpu);
}

static int bare (char **w)
{
    return sp_argv_bare_before_command (nwords (w), w, "ddp");
}

static bool colon (char **w)
{
    return sp_argv_has_colon (nwords (w), w);
}

static void nop (const struct sp_argv_opt *o, void *arg)
{
    (void) o;
    (void) arg;
}

static void test_scan (void)
{
    char **w = WORDS ("srun", "-N2", "prog", "a");

    is_int (sp_argv_scan (nwords (w), w, NULL, NULL), -1,
            "a NULL callback is an error");
    is_int (sp_argv_scan (nwords (w), w, nop, NULL), 2,
            "the command is at 2");
    w = WORDS ("srun", "-N2", "--", "prog");
    is_int (sp_argv_scan (nwords (w), w, nop, NULL), 3,
            "after --, the command is at 3");
    w = WORDS ("srun", "-N2");
    is_int (sp_argv_scan (nwords (w), w, nop, NULL), 2,
            "no command: argc");
    ok (abbrev (WORDS ("srun", "--gpus-per-n=2", "p")),
        "--gpus-per-n abbreviates a GPU option");
    ok (abbrev (WORDS ("srun", "--gr", "gpu:1", "p")),
        "--gr abbreviates --gres");
    ok (!abbrev (WORDS ("srun", "--gpus=2", "--gres=gpu:1", "p")),
        "names spelt out are not abbreviations");
    ok (!abbrev (WORDS ("srun", "--ntasks=4", "p")),
        "--ntasks is an option of its own, not an abbreviation of "
        "--ntasks-per-gpu");
    ok (!abbrev (WORDS ("srun", "-n2", "p", "--gpus-per-n=1")),
        "after the command: not srun's");
    ok (!sp_argv_abbreviates (1, WORDS ("srun"), NULL), "NULL names: no");
}

static void test_bare (void)
{
    is_int (bare (WORDS ("srun", "-N2", "--ddp", "host", "./t")), 3,
            "--ddp host ./t: the command is host, at 3");
    is_int (bare (WORDS ("srun", "--ddp", "-N2", "host")), 0,
            "--ddp followed by options: not before the command");
    is_int (bare (WORDS ("srun", "--ddp=host", "prog")), 0,
            "--ddp=host: not bare");
    is_int (bare (WORDS ("srun", "--ddp")), 0, "no command at all");
    is_int (bare (WORDS ("srun", "--ddp", "--", "host")), 0,
            "-- between them");
    is_int (sp_argv_bare_before_command (1, NULL, "ddp"), 0, "NULL argv");
    ok (colon (WORDS ("srun", "-n1", "a", ":", "-n1", "b")), "':' found");
    ok (!colon (WORDS ("srun", "-n1", "a:b")),
        "':' inside a word is not a separator");
    ok (!sp_argv_has_colon (3, NULL), "NULL argv: no");
}

int main (void)
{
    test_find ();
    test_value ();
    test_scan ();
    test_bare ();
    return done_testing ();
}

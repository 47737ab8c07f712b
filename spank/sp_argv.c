/* sp_argv.c - srun's own command line, read before srun has parsed it. */
#include "config.h"
#include <errno.h>
#include <string.h>

#include "sp_argv.h"

/* srun's long options that take no argument or an optional one (Slurm
 * 22.05 srun --help), and the plugin's own --ddp: a word after them is not
 * their argument. */
static const char *const srun_flag_options[] = {
    "bcast", "compress", "contiguous", "disable-status", "exact",
    "exclusive", "help", "hold", "immediate", "kill-on-bad-exit", "label",
    "multi-prog", "nice", "no-allocate", "no-kill", "overcommit", "overlap",
    "oversubscribe", "preserve-env", "propagate", "pty", "quiet",
    "quit-on-interrupt", "reboot", "resv-ports", "send-libs", "spread-job",
    "test-only", "unbuffered", "usage", "use-min-nodes", "verbose", "version",
    "whole", "x11", "debugger-test", "share", "jobid-override", NULL,
};

/* srun's long options whose full name is also the start of another one
 * ("--ntasks" and "--ntasks-per-gpu"): spelt out, they are not
 * abbreviations. */
static const char *const srun_prefix_options[] = {
    "gpus", "gres", "mem", "ntasks", "time", NULL,
};

/* The plugin's own option, whose argument is optional: never the next
 * word, even when abbreviated ("--dd"; no option of srun starts so). */
#define PLUGIN_OPTION "ddp"

/* srun's short options that take a required argument. */
static const char srun_short_with_arg[] = "AbBcCdDeGiJLmMnNopqrStTwWx";

static bool in_list (const char *const list[], const char *name, size_t len)
{
    int i;

    for (i = 0; list[i]; i++) {
        if (strlen (list[i]) == len && strncmp (list[i], name, len) == 0)
            return true;
    }
    return false;
}

/* Does the long option NAME (LEN characters) take no separate argument? */
static bool is_flag (const char *name, size_t len)
{
    return in_list (srun_flag_options, name, len)
           || (len >= 2 && len <= strlen (PLUGIN_OPTION)
               && strncmp (name, PLUGIN_OPTION, len) == 0);
}

/* The short-option cluster at argv[*i] (after its '-'): report each letter,
 * the one taking an argument with the rest of the word or the next word. */
static void scan_short (int argc, char *const argv[], int *i,
                        void (*fn) (const struct sp_argv_opt *, void *),
                        void *arg)
{
    struct sp_argv_opt o = { .index = *i };
    const char *w;

    for (w = argv[*i] + 1; *w; w++) {
        o.letter = *w;
        o.value = NULL;
        if (strchr (srun_short_with_arg, *w)) {
            if (w[1])
                o.value = w + 1;
            else if (*i + 1 < argc)
                o.value = argv[++*i];
            fn (&o, arg);
            return;
        }
        fn (&o, arg);
    }
}

/* The long option at argv[*i]: report it, with its argument. */
static void scan_long (int argc, char *const argv[], int *i,
                       void (*fn) (const struct sp_argv_opt *, void *),
                       void *arg)
{
    struct sp_argv_opt o = { .index = *i };
    const char *eq;

    o.name = argv[*i] + 2;
    eq = strchr (o.name, '=');
    o.namelen = eq ? (size_t) (eq - o.name) : strlen (o.name);
    if (eq)
        o.value = eq + 1;
    else if (!is_flag (o.name, o.namelen) && *i + 1 < argc)
        o.value = argv[++*i];       /* "--option ARG" */
    fn (&o, arg);
}

int sp_argv_scan (int argc, char *const argv[],
                  void (*fn) (const struct sp_argv_opt *opt, void *arg),
                  void *arg)
{
    int i;

    if (argc < 0 || !argv || !fn) {
        errno = EINVAL;
        return -1;
    }
    for (i = 1; i < argc && argv[i]; i++) {
        const char *w = argv[i];

        if (strcmp (w, "--") == 0)
            return i + 1;
        if (w[0] != '-' || w[1] == '\0')
            return i;               /* the command */
        if (w[1] == '-')
            scan_long (argc, argv, &i, fn, arg);
        else
            scan_short (argc, argv, &i, fn, arg);
    }
    return i < argc ? i : argc;
}

/* What one of the searches below looks for, and what it found. */
struct search {
    const char *name;
    char letter;
    bool abbrev;                /* NAME may be abbreviated */
    int found;
    const char *value;
    int index;
};

/* Does long option O name NAME, possibly abbreviated (at least two
 * characters) when ABBREV? */
static bool names (const struct sp_argv_opt *o, const char *name, bool abbrev)
{
    size_t n = strlen (name);

    if (!o->name || o->namelen > n || strncmp (o->name, name, o->namelen))
        return false;
    return o->namelen == n || (abbrev && o->namelen >= 2);
}

static void match (const struct sp_argv_opt *o, void *arg)
{
    struct search *s = arg;

    if ((s->name && names (o, s->name, s->abbrev))
        || (s->letter && o->letter == s->letter)) {
        s->found = 1;
        s->value = o->value;
        s->index = o->index;
    }
}

int sp_argv_find (int argc, char *const argv[], const char *name,
                  const char **value)
{
    struct search s = { .name = name, .abbrev = true };

    if (!name || !*name || !value || sp_argv_scan (argc, argv, match, &s) < 0) {
        errno = EINVAL;
        return -1;
    }
    if (s.found) {
        /* An optional argument is only ever attached with '='. */
        const char *w = argv[s.index];
        *value = strchr (w, '=') ? s.value : NULL;
    }
    return s.found;
}

int sp_argv_value (int argc, char *const argv[], const char *name,
                   char letter, const char **value)
{
    struct search s = { .name = name, .letter = letter };

    if (!name || !*name || !value || sp_argv_scan (argc, argv, match, &s) < 0) {
        errno = EINVAL;
        return -1;
    }
    if (s.found)
        *value = s.value;
    return s.found;
}

/* What sp_argv_abbreviates looks for. */
struct abbrev {
    const char *const *names;
    bool seen;
};

static void match_abbrev (const struct sp_argv_opt *o, void *arg)
{
    struct abbrev *a = arg;
    int i;

    if (!o->name || o->namelen < 2 || in_list (a->names, o->name, o->namelen)
        || in_list (srun_prefix_options, o->name, o->namelen))
        return;
    for (i = 0; a->names[i]; i++) {
        if (names (o, a->names[i], true))
            a->seen = true;
    }
}

bool sp_argv_abbreviates (int argc, char *const argv[],
                          const char *const names[])
{
    struct abbrev a = { .names = names };

    return names && sp_argv_scan (argc, argv, match_abbrev, &a) >= 0
           && a.seen;
}

int sp_argv_bare_before_command (int argc, char *const argv[],
                                 const char *name)
{
    struct search s = { .name = name, .abbrev = true };
    int cmd;

    if (!name || !*name || (cmd = sp_argv_scan (argc, argv, match, &s)) < 0)
        return 0;
    if (!s.found || cmd >= argc || s.index != cmd - 1
        || strchr (argv[s.index], '='))
        return 0;
    return cmd;
}

bool sp_argv_has_colon (int argc, char *const argv[])
{
    int i;

    for (i = 1; argv && i < argc && argv[i]; i++) {
        if (strcmp (argv[i], ":") == 0)
            return true;
    }
    return false;
}

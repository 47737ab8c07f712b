/* sp_argv.h - srun's own command line, read before srun has parsed it.
 *
 * srun parses its options with getopt_long in "+" mode: options come first,
 * the first word that is neither an option nor an option's argument is the
 * command srun launches, and everything after it belongs to the command.
 * The scan below follows that: it knows which of srun's long options take
 * no argument (or an optional one, like --ddp), and which short options take
 * one; any other long option written without '=' is taken to consume the
 * next word ("--partition debug").  It cannot know options of other SPANK
 * plugins, nor abbreviations of srun's flags ("--lab" for --label): such a
 * word is taken to consume the next one.
 */
#ifndef SP_ARGV_H
#define SP_ARGV_H

#include <stdbool.h>
#include <stddef.h>

/* One option of srun's command line as the scan sees it. */
struct sp_argv_opt {
    const char *name;     /* long option: the text after "--" (NAMELEN
                             characters, up to any '='); NULL if short */
    size_t namelen;
    char letter;          /* short option: its letter; 0 if long */
    const char *value;    /* its argument: after '=', the rest of a short
                             cluster, or the next word; NULL if none */
    int index;            /* the index in ARGV of the option's word */
};

/* Call FN (OPT, ARG) for each of srun's options in ARGV (ARGC words,
 * ARGV[0] is srun itself), in order.  Returns the index of the command
 * word (ARGC when there is none; the word after a "--"), or -1 with errno
 * EINVAL for a NULL ARGV or FN or a negative ARGC. */
int sp_argv_scan (int argc, char *const argv[],
                  void (*fn) (const struct sp_argv_opt *opt, void *arg),
                  void *arg);

/* Look for --NAME / --NAME=VALUE among srun's options, NAME possibly
 * abbreviated to any prefix of at least two characters.  Returns 1 when
 * found (the last occurrence wins; *VALUE points into ARGV, or is NULL for
 * a bare --NAME: NAME is taken to have an optional argument, as --ddp),
 * 0 when not found, -1 (errno EINVAL) for NULL arguments or an empty NAME. */
int sp_argv_find (int argc, char *const argv[], const char *name,
                  const char **value);

/* Look for the option NAME, spelt out exactly, taking a required argument
 * ("--NAME=V" or "--NAME V"), or for the short option LETTER ("-XV", "-X V";
 * 0 for none).  Returns 1 and sets *VALUE (into ARGV) for the last
 * occurrence, 0 when absent, -1 (errno EINVAL) for NULL arguments. */
int sp_argv_value (int argc, char *const argv[], const char *name,
                   char letter, const char **value);

/* True when one of srun's options in ARGV is a strict abbreviation (at
 * least two characters) of one of NAMES (a NULL-terminated list) without
 * being spelt out as any of them: the scan cannot tell which one srun
 * will take it for. */
bool sp_argv_abbreviates (int argc, char *const argv[],
                          const char *const names[]);

/* Where bare --NAME stands right before the command: returns the index of
 * the command word when the last --NAME among srun's options is bare (no
 * '=') and is the last word before the command, 0 otherwise (also for NULL
 * arguments).  "srun --ddp host prog" runs a program called "host". */
int sp_argv_bare_before_command (int argc, char *const argv[],
                                 const char *name);

/* True when ARGV has a word ":" anywhere: srun splits its command line
 * there into the components of a heterogeneous step. */
bool sp_argv_has_colon (int argc, char *const argv[]);

#endif /* SP_ARGV_H */

/* sp_torchrun.c - recognising a step whose command is torchrun. */
#include "config.h"
#include <string.h>

#include "sp_torchrun.h"

static const char *base_name (const char *path)
{
    const char *slash = strrchr (path, '/');

    return slash ? slash + 1 : path;
}

/* "python", "python3", "python3.11": python followed by digits and dots. */
static bool is_python (const char *name)
{
    if (strncmp (name, "python", 6) != 0)
        return false;
    return strspn (name + 6, "0123456789.") == strlen (name + 6);
}

static bool is_torch_module (const char *m)
{
    return m && (strcmp (m, "torch.distributed.run") == 0
                 || strcmp (m, "torch.distributed.launch") == 0);
}

/* The module python's options in ARGV name with -m, or NULL: python's
 * short options come one word at a time or clustered ("-um MOD", "-mMOD");
 * -W and -X take an argument; -c, "--" or the first non-option end the
 * search. */
static const char *python_module (int argc, char *const argv[])
{
    int i;
    const char *w;

    for (i = 1; i < argc && argv[i]; i++) {
        w = argv[i];
        if (w[0] != '-' || w[1] == '-' || w[1] == '\0')
            return NULL;
        for (w++; *w; w++) {
            if (*w == 'c')
                return NULL;
            if (*w == 'm' || *w == 'W' || *w == 'X') {
                const char *arg = w[1] ? w + 1 : (i + 1 < argc ? argv[++i]
                                                              : NULL);
                if (*w == 'm')
                    return arg;
                break;
            }
        }
    }
    return NULL;
}

bool sp_cmd_is_torchrun (int argc, char *const argv[])
{
    const char *name;

    if (argc < 1 || !argv || !argv[0])
        return false;
    name = base_name (argv[0]);
    if (strcmp (name, "torchrun") == 0)
        return true;
    return is_python (name) && is_torch_module (python_module (argc, argv));
}

/* deps.c - the files of the host backend call each other along a DAG: no
 * chain of calls leads from a file back to itself; and every call goes
 * down the layers of doc/host-backend.md (or within one): the transport
 * (shm, tcp, mesh, flood) reports events and calls nothing above it; the
 * fault policy (fault.c) is above it and below the algorithms; the
 * collectives (coll.c, cross.c: their phases on several nodes) and the
 * set-up (host.c) are on top.
 *
 * Read from the symbols of the built objects (nm over libddphost.a, found
 * beside this test: ../.libs/ from the test binary's folder). */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#define MAXOBJ 32
#define MAXSYM 4096

struct sym {
    char name[256];
    int obj;
    int defined;
};

static char objs[MAXOBJ][64];
static int nobj;
static struct sym syms[MAXSYM];
static int nsym;
static int edge[MAXOBJ][MAXOBJ];

/* The layers, bottom (0) up; an object not listed fails the test (a new
 * file of the backend takes its place here and in doc/host-backend.md). */
static const struct { const char *obj; int layer; } layers[] = {
    { "record.o", 0 }, { "schedule.o", 0 }, { "gate.o", 0 },
    { "trail.o", 0 },
    { "shm.o", 1 }, { "tcp.o", 1 }, { "mesh.o", 1 }, { "flood.o", 1 },
    { "fault.o", 2 },
    { "algo.o", 3 }, { "node.o", 3 },
    { "coll.o", 4 }, { "cross.o", 4 },
    { "host.o", 5 },
};

static int layer_of (const char *obj)
{
    for (size_t i = 0; i < sizeof (layers) / sizeof (layers[0]); i++)
        if (strcmp (layers[i].obj, obj) == 0)
            return layers[i].layer;
    return -1;
}

static int obj_index (const char *name)
{
    for (int i = 0; i < nobj; i++)
        if (strcmp (objs[i], name) == 0)
            return i;
    if (nobj == MAXOBJ)
        return -1;
    snprintf (objs[nobj], sizeof (objs[nobj]), "%s", name);
    return nobj++;
}

/* Parse `nm` output: "NAME.o:" starts an object, "  U sym" is a use,
 * "ADDR T sym" a definition.  Returns the number of symbols read. */
static int read_nm (FILE *f)
{
    char line[512], a[256], b[256], c[256];
    int cur = -1;

    while (fgets (line, sizeof (line), f)) {
        size_t n = strlen (line);
        int k;
        while (n && (line[n - 1] == '\n' || line[n - 1] == ':')) {
            if (line[n - 1] == ':' && n > 2 && line[n - 2] == 'o')
                cur = -2;   /* marks an object header below */
            line[--n] = '\0';
        }
        if (cur == -2) {
            cur = obj_index (line);
            continue;
        }
        if (cur < 0 || nsym == MAXSYM)
            continue;
        k = sscanf (line, "%255s %255s %255s", a, b, c);
        if (k == 2 && strcmp (a, "U") == 0)
            syms[nsym++] = (struct sym){ "", cur, 0 };
        else if (k == 3 && strlen (b) == 1 && strchr ("TDBR", b[0]))
            syms[nsym++] = (struct sym){ "", cur, 1 };
        else
            continue;
        snprintf (syms[nsym - 1].name, sizeof (syms[0].name), "%s",
                  k == 2 ? b : c);
    }
    return nsym;
}

static void build_edges (void)
{
    for (int i = 0; i < nsym; i++) {
        if (syms[i].defined)
            continue;
        for (int j = 0; j < nsym; j++)
            if (syms[j].defined && syms[j].obj != syms[i].obj
                && strcmp (syms[i].name, syms[j].name) == 0)
                edge[syms[i].obj][syms[j].obj] = 1;
    }
}

/* Depth-first search for a cycle; state 1: on the path, 2: done. */
static int cyclic (int v, int *state)
{
    state[v] = 1;
    for (int w = 0; w < nobj; w++) {
        if (!edge[v][w])
            continue;
        if (state[w] == 1) {
            diag ("cycle through %s -> %s", objs[v], objs[w]);
            return 1;
        }
        if (state[w] == 0 && cyclic (w, state))
            return 1;
    }
    state[v] = 2;
    return 0;
}

int main (int argc, char **argv)
{
    char self[PATH_MAX], cmd[PATH_MAX + 64];
    int state[MAXOBJ] = { 0 }, cycle = 0, fault = -1, up = 0;
    int tcp = -1, mesh = -1;
    FILE *f;

    (void)argc;
    snprintf (self, sizeof (self), "%s", argv[0]);
    snprintf (cmd, sizeof (cmd), "nm %s/../.libs/libddphost.a 2>/dev/null",
              dirname (self));
    plan (4);
    if (!(f = popen (cmd, "r"))) {
        ok (0, "run %s", cmd);
        return 1;
    }
    read_nm (f);
    pclose (f);
    ok (nsym > 0 && nobj >= 3, "read %d symbols of %d objects (%s)", nsym,
        nobj, cmd);
    build_edges ();
    for (int i = 0; i < nobj; i++) {
        for (int j = 0; j < nobj; j++)
            if (edge[i][j])
                diag ("%s calls %s", objs[i], objs[j]);
        if (strcmp (objs[i], "fault.o") == 0)
            fault = i;
        if (strcmp (objs[i], "tcp.o") == 0)
            tcp = i;
        if (strcmp (objs[i], "mesh.o") == 0)
            mesh = i;
    }
    for (int i = 0; i < nobj; i++) {
        int li = layer_of (objs[i]);
        if (li < 0) {
            diag ("%s has no layer in deps.c", objs[i]);
            up++;
        }
        for (int j = 0; j < nobj; j++)
            if (edge[i][j] && li >= 0 && layer_of (objs[j]) > li) {
                diag ("%s (layer %d) calls up into %s (layer %d)", objs[i],
                      li, objs[j], layer_of (objs[j]));
                up++;
            }
    }
    ok (up == 0 && fault >= 0, "every call goes down the layers (or within "
        "one), and every object has its layer");
    for (int i = 0; i < nobj && !cycle; i++)
        if (state[i] == 0)
            cycle = cyclic (i, state);
    ok (!cycle, "the calls between the files form a DAG");
    /* mesh.c makes the links and tcp.c uses them (and keeps the table's
     * lookups): the user never reaches back into the maker. */
    ok (tcp >= 0 && mesh >= 0 && !edge[tcp][mesh],
        "tcp.o (the links in use) calls nothing of mesh.o (making them)");
    done_testing ();
}

/* check.c - the result checks made while measuring (see check.h). */
#include "config.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

#define POISON (-1.0f)
#define MAX_REPORTED_ERRORS 5

float check_val (int r, size_t i, int tag)
{
    uint64_t v = (uint64_t)r * 131u + (uint64_t)i * 7u + (uint64_t)tag * 13u;
    return (float)(v % 1021u + 1u);
}

long check_mismatch (struct check *c, const char *what, size_t idx, float got,
                     float want)
{
    if (c->reported++ < MAX_REPORTED_ERRORS)
        fprintf (stderr, "%s: rank %d: %s: element %zu is %g, expected %g\n",
                 c->prog, c->rank, what, idx, (double)got, (double)want);
    return 1;
}

static bool gathers (enum bench_op k)
{
    return k == BENCH_ALLGATHER || k == BENCH_GATHER;
}

/* The op whose results op k's are: overlap's calls are allreduces. */
static enum bench_op checked_as (enum bench_op k)
{
    return k == BENCH_OVERLAP ? BENCH_ALLREDUCE : k;
}

/* Whether rank r's data goes into this rank's result of op k (k's group). */
static bool contributes (const struct check *c, enum bench_op k, int r)
{
    return k != BENCH_GROUP_ALLREDUCE || r % 2 == c->rank % 2;
}

/* Element p of the send side in round tag: the root's values for bcast,
 * poison on the other ranks (they receive in place). */
static float send_val (const struct check *c, enum bench_op k, size_t p,
                       int tag)
{
    if (k == BENCH_BCAST)
        return c->rank == 0 ? check_val (0, p, tag) : POISON;
    return check_val (c->rank, p, tag);
}

/* Position p of the send side of op k (reduce_scatter: position p of every
 * rank's block, each rank's result at p being made of them): fresh values
 * for round tag. */
static void set_send (struct check *c, enum bench_op k, size_t count,
                      size_t p, int tag)
{
    if (k != BENCH_REDUCE_SCATTER) {
        c->send[p] = send_val (c, k, p, tag);
        return;
    }
    for (int b = 0; b < c->size; b++) {
        size_t i = (size_t)b * count + p;
        c->send[i] = send_val (c, k, i, tag);
    }
}

/* Poison position p of the receive side of op k (every rank's block of a
 * gather); bcast has none (its send side was poisoned). */
static void poison_recv (struct check *c, enum bench_op k, size_t count,
                         size_t p)
{
    if (gathers (k))
        for (int r = 0; r < c->size; r++)
            c->recv[(size_t)r * count + p] = POISON;
    else if (k != BENCH_BCAST)
        c->recv[p] = POISON;
}

/* Check position p of op k's result in round tag; returns wrong elements. */
static long check_pos (struct check *c, enum bench_op k, size_t count, int tag,
                       size_t p)
{
    const char *op = bench_op_name (k);
    long err = 0;
    float want = 0;
    size_t src = p;

    switch (checked_as (k)) {
        case BENCH_BCAST:
            want = check_val (0, p, tag);
            if (c->send[p] != want)
                err += check_mismatch (c, op, p, c->send[p], want);
            break;
        case BENCH_REDUCE_SCATTER:
            src = (size_t)c->rank * count + p;  /* this rank's block */
            /* fall through */
        case BENCH_ALLREDUCE:
        case BENCH_GROUP_ALLREDUCE:
            for (int r = 0; r < c->size; r++)
                if (contributes (c, k, r))
                    want += check_val (r, src, tag);
            if (c->recv[p] != want)
                err += check_mismatch (c, op, p, c->recv[p], want);
            break;
        case BENCH_GATHER:
            if (c->rank != 0)
                break;
            /* fall through */
        case BENCH_ALLGATHER:
            for (int r = 0; r < c->size; r++) {
                size_t i = (size_t)r * count + p;
                want = check_val (r, p, tag);
                if (c->recv[i] != want)
                    err += check_mismatch (c, op, i, c->recv[i], want);
            }
            break;
        default:
            break;
    }
    return err;
}

/* Put the base pattern (tag 0) back at position p of the send side: what
 * every rank holds after a correct bcast, its own values otherwise. */
static void restore (struct check *c, enum bench_op k, size_t count, size_t p)
{
    if (k == BENCH_BCAST)
        c->send[p] = check_val (0, p, 0);
    else
        set_send (c, k, count, p, 0);
}

void check_full_prepare (struct check *c, enum bench_op k, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        set_send (c, k, count, i, 0);
        poison_recv (c, k, count, i);
    }
}

long check_full (struct check *c, enum bench_op k, size_t count)
{
    long err = 0;

    for (size_t i = 0; i < count; i++) {
        err += check_pos (c, k, count, 0, i);
        restore (c, k, count, i);
    }
    return err;
}

void check_positions (size_t count, int it, size_t pos[CHECK_NPOS])
{
    uint64_t x = (uint64_t)count * 0x9e3779b97f4a7c15ull + (uint64_t)(it + 1000);

    pos[0] = 0;
    pos[1] = count - 1;
    for (int i = 2; i < CHECK_NPOS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        pos[i] = (size_t)(x % count);
    }
}

void check_sample_prepare (struct check *c, enum bench_op k, size_t count,
                           int tag, const size_t pos[CHECK_NPOS])
{
    for (int j = 0; j < CHECK_NPOS; j++) {
        set_send (c, k, count, pos[j], tag);
        poison_recv (c, k, count, pos[j]);
    }
}

long check_sample (struct check *c, enum bench_op k, size_t count, int tag,
                   const size_t pos[CHECK_NPOS])
{
    long err = 0;

    for (int j = 0; j < CHECK_NPOS; j++)
        err += check_pos (c, k, count, tag, pos[j]);
    for (int j = 0; j < CHECK_NPOS; j++)
        restore (c, k, count, pos[j]);
    return err;
}

void check_inject (struct check *c, enum bench_op k)
{
    if (k == BENCH_BCAST)
        c->send[0] = POISON - 1;
    else
        c->recv[0] = POISON - 1;
}

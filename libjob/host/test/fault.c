/* fault.c - the fault record's claim and merge (libjob/host/fault.c) and
 * the order in which a peer's addresses are tried (tcp.c), without
 * processes: lists that flood over the partner graph arrive several
 * times, and must neither grow the count nor bump the version then; a
 * FAULT frame's list read partly from what its link read ahead. */
#include "config.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tap.h"
#include "host.h"
#include "tcp.h"

static struct host *new_host (int size)
{
    static struct ddp_config cfg = {.timeout_s = 5.0, .debug = false};
    struct host *h = calloc (1, sizeof (*h));
    h->hdr = calloc (1, sizeof (*h->hdr));
    h->size = size;
    h->cfg = &cfg;
    return h;
}

static void free_host (struct host *h)
{
    free (h->hdr);
    free (h);
}

static void test_claim (void)
{
    struct host *h = new_host (100);
    int a[3] = { 7, 3, 5 }, b[1] = { 9 }, fallback = 42;

    ok (host_fault_claim (h, a, 3, 3, FAULT_TIMEOUT, 1, 12) == 1, "first claim");
    ok (host_fault_claim (h, b, 1, 1, FAULT_DIED, 2, 13) == 0,
        "a second claim does not replace it");
    ok (h->hdr->fault_nlist == 3 && h->hdr->fault_list[0] == 3
        && h->hdr->fault_list[2] == 7, "the list is kept sorted");
    ok (atomic_load (&h->hdr->fault_kind) == FAULT_TIMEOUT
        && atomic_load (&h->hdr->fault_reporter) == 1
        && h->hdr->fault_call == 12, "kind, reporter and call");
    free_host (h);
    h = new_host (100);
    ok (host_fault_claim (h, &fallback, 0, 0, FAULT_TIMEOUT, 3, 0) == 1
        && h->hdr->fault_nlist == 0 && h->hdr->fault_n == 0
        && atomic_load (&h->hdr->fault_rank) == 43,
        "an empty claim keeps its fallback rank");
    free_host (h);
}

/* A FAULT frame carries its reporter and the low half of its call in
 * len; the receiver takes the call nearest its own with that low half. */
static void test_call_wire (void)
{
    struct fault_msg m;
    int r = 70000;
    uint64_t big = (5ull << 32) + 3;

    host_fault_msg_fill (&m, &r, NULL, 1, 1, FAULT_MISMATCH, 99999, big);
    ok ((m.f.len & 0xffffffffu) == 99999 && m.f.len >> 32 == 3,
        "the frame carries the reporter and the call's low half");
    ok (host_fault_call_near (big - 2, (uint32_t)(m.f.len >> 32)) == big,
        "a call 2 ahead of the receiver's, across a wrap of the low half");
    ok (host_fault_call_near (big + 5, 3) == big,
        "a call 5 behind the receiver's");
    ok (host_fault_call_near (10, 10) == 10, "the receiver's own call");
    ok (host_fault_call_near (10, 0) == 0, "0: unknown stays unknown");
    ok (host_fault_call_near (2, 0xffffffffu) == 0,
        "a call before the first is unknown");
    ok (host_fault_call_near (0, 4) == 4, "a receiver before its first call");
}

static void test_merge (void)
{
    struct host *h = new_host (1000);
    int32_t a[2] = { 10, 4 }, b[3] = { 4, 12, 10 }, big[FAULT_LIST_MAX];
    int first = 4, v;

    host_fault_claim (h, &first, 0, 0, FAULT_TIMEOUT, 0, 0);
    v = atomic_load (&h->hdr->fault_version);
    host_fault_merge (h, a, NULL, 2, 2);
    ok (h->hdr->fault_nlist == 2 && h->hdr->fault_n == 2
        && atomic_load (&h->hdr->fault_version) == v + 1,
        "a merge into an empty list takes it and bumps the version");
    host_fault_merge (h, a, NULL, 2, 2);
    ok (h->hdr->fault_n == 2 && atomic_load (&h->hdr->fault_version) == v + 1,
        "the same list again changes nothing");
    host_fault_merge (h, b, NULL, 3, 3);
    ok (h->hdr->fault_nlist == 3 && h->hdr->fault_n == 3
        && h->hdr->fault_list[2] == 12
        && atomic_load (&h->hdr->fault_version) == v + 2,
        "an overlapping list adds only what is new");
    for (int i = 0; i < FAULT_LIST_MAX; i++)
        big[i] = 100 + i;
    host_fault_merge (h, big, NULL, FAULT_LIST_MAX, 50);
    is_int (h->hdr->fault_nlist, FAULT_LIST_MAX, "the list is full");
    is_int (h->hdr->fault_n, FAULT_LIST_MAX + 18,
            "the count is the union plus the unlisted part");
    v = atomic_load (&h->hdr->fault_version);
    host_fault_merge (h, big, NULL, FAULT_LIST_MAX, 50);
    host_fault_merge (h, big, NULL, FAULT_LIST_MAX, 50);
    ok (h->hdr->fault_n == FAULT_LIST_MAX + 18
        && atomic_load (&h->hdr->fault_version) == v,
        "a list that floods in twice is not counted twice");
    big[0] = -5;
    big[1] = 5000;
    host_fault_merge (h, big, NULL, 2, 2000000);
    ok (h->hdr->fault_n <= h->size, "counts from the wire stay within the "
        "world (%d)", h->hdr->fault_n);
    free_host (h);
}

/* States ride with their ranks: a rank the record lists without one gets
 * it from a later list, one it knows keeps its own. */
static void test_states (void)
{
    struct host *h = new_host (100);
    int32_t a[2] = { 9, 4 }, b[2] = { 4, 9 };
    uint64_t sa[2] = { FAULT_STATE (12, KIND_BARRIER, 0), 0 };
    uint64_t sb[2] = { FAULT_STATE (99, KIND_BCAST, 1),
                       FAULT_STATE (11, KIND_ALLREDUCE, 1) };
    int first = 4, v;

    host_fault_claim (h, &first, 0, 0, FAULT_TIMEOUT, 0, 0);
    host_fault_merge (h, a, sa, 2, 2);
    ok (h->hdr->fault_list[0] == 4 && h->hdr->fault_state[0] == 0
        && h->hdr->fault_list[1] == 9
        && h->hdr->fault_state[1] == FAULT_STATE (12, KIND_BARRIER, 0),
        "states are sorted along with their ranks");
    v = atomic_load (&h->hdr->fault_version);
    host_fault_merge (h, b, sb, 2, 2);
    ok (h->hdr->fault_state[0] == FAULT_STATE (99, KIND_BCAST, 1)
        && h->hdr->fault_state[1] == FAULT_STATE (12, KIND_BARRIER, 0)
        && atomic_load (&h->hdr->fault_version) == v + 1,
        "an unknown state is filled in, a known one kept, the version bumped");
    ok (FAULT_STATE_CALL (h->hdr->fault_state[0]) == 99
        && FAULT_STATE_KIND (h->hdr->fault_state[0]) == KIND_BCAST
        && FAULT_STATE_IN (h->hdr->fault_state[0]), "a state unpacks");
    free_host (h);
}

static void test_addrs (void)
{
    struct host_addr a = { 0 };
    uint32_t lo = htonl (INADDR_LOOPBACK), far = htonl (0xc0000201);

    a.n = 2;
    a.ip[0] = far;      /* 192.0.2.1: on no subnet of this machine */
    a.ip[1] = lo;
    host_tcp_order_addrs (&a, true);
    ok (a.n == 2 && a.ip[0] == lo && a.ip[1] == far,
        "a peer on this machine: loopback first");
    a.n = 2;
    a.ip[0] = lo;
    a.ip[1] = far;
    host_tcp_order_addrs (&a, false);
    ok (a.n == 1 && a.ip[0] == far,
        "a peer on another machine: its loopback address is dropped");
}

/* A FAULT frame's list and states from a link that read `ahead` bytes of
 * its body (and `extra` bytes of the next frame when the body is all
 * there) ahead; the rest of the body comes through the socket. */
static void frame_list_ahead (size_t ahead, size_t extra, const char *what)
{
    struct host *h = new_host (100);
    int ranks[3] = { 5, 2, 9 }, sv[2], n;
    uint64_t st[3] = { 11, 22, 33 }, got_st[FAULT_LIST_MAX];
    int32_t got[FAULT_LIST_MAX];
    struct fault_msg m;
    size_t len = host_fault_msg_fill (&m, ranks, st, 3, 3, FAULT_DIED, 1,
                                      7);
    size_t body = len - sizeof (m.f);
    char rb[256];
    struct link l = { .rb = rb, .rb_off = 0, .rb_len = ahead + extra };
    bool whole = false;

    if (socketpair (AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        bail_out ("socketpair failed");
    memcpy (rb, m.body, ahead);
    memset (rb + ahead, 'x', extra);
    if (write (sv[1], m.body + ahead, body - ahead)
        != (ssize_t)(body - ahead))
        bail_out ("write to a socketpair failed");
    n = host_frame_list (h, sv[0], &l, 99, &m.f, got, got_st, &whole);
    ok (whole && n == 3 && got[0] == 5 && got[1] == 2 && got[2] == 9
        && got_st[0] == 11 && got_st[1] == 22 && got_st[2] == 33,
        "%s: the list and states are whole", what);
    ok (l.rb_len - l.rb_off == extra
        && (extra == 0 || l.rb[l.rb_off] == 'x'),
        "%s: what follows the body stays read ahead", what);
    close (sv[0]);
    close (sv[1]);
    free_host (h);
}

static void test_frame_list (void)
{
    size_t body = 3 * (sizeof (int32_t) + sizeof (uint64_t));

    frame_list_ahead (0, 0, "nothing read ahead");
    frame_list_ahead (7, 0, "part of a rank read ahead");
    frame_list_ahead (body - 1, 0, "all but a byte read ahead");
    frame_list_ahead (body, 5, "the whole body and more read ahead");
}

int main (void)
{
    plan (NO_PLAN);
    test_claim ();
    test_call_wire ();
    test_merge ();
    test_states ();
    test_addrs ();
    test_frame_list ();
    done_testing ();
}

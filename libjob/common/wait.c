/* wait.c - bounded waiting (see wait.h). */
#include "config.h"

#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#include "ddp_internal.h"
#include "wait.h"

static inline void cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause ();
#elif defined(__aarch64__)
    __asm__ __volatile__ ("yield" ::: "memory");
#else
    __asm__ __volatile__ ("" ::: "memory");
#endif
}

void ddpi_wait_init (struct ddpi_waiter *w, double timeout_s,
                     unsigned spin_us)
{
    w->iter = 0;
    w->spin_us = spin_us;
    w->spinning = spin_us > 0;
    w->yield_s = DDPI_WAIT_YIELD_S;
    w->start = 0;
    w->deadline = 0;
    w->next_check = 0;
    w->timeout_s = timeout_s;
    w->nap = NULL;
    w->nap_arg = NULL;
}

/* How long a nap hook may sleep from now: up to the next liveness check
 * (or the deadline), at least a microsecond. */
static double nap_bound (const struct ddpi_waiter *w, double now)
{
    double until = w->next_check < w->deadline ? w->next_check : w->deadline;

    return until - now > 1e-6 ? until - now : 1e-6;
}

int ddpi_wait_step (struct ddpi_waiter *w)
{
    double now;

    w->iter++;
    if (w->spinning) {
        cpu_relax ();
        if ((w->iter & 63) != 0)
            return 0;
    }
    now = ddpi_now ();
    if (w->start == 0) {
        w->start = now;
        w->deadline = now + w->timeout_s;
        w->next_check = now + 0.002;
    }
    if (w->spinning) {
        if (now - w->start < w->spin_us * 1e-6)
            return 0;
        w->spinning = false;
    }
    if (now > w->deadline)
        return -1;
    if (now - w->start < w->yield_s)
        sched_yield ();
    else if (!w->nap || w->nap (w->nap_arg, nap_bound (w, now)) < 0) {
        /* Long waits (a peer computing): sleep, longer as it goes on. */
        struct timespec ts = { 0, now - w->start < 0.2 ? 50000 : 500000 };
        nanosleep (&ts, NULL);
    }
    if (now >= w->next_check) {
        w->next_check = now + 0.002;
        return 1;
    }
    return 0;
}

void ddpi_wait_yield (struct ddpi_waiter *w, double yield_s)
{
    w->yield_s = yield_s;
}

void ddpi_wait_nap (struct ddpi_waiter *w, int (*nap) (void *, double),
                    void *arg)
{
    w->nap = nap;
    w->nap_arg = arg;
}

void ddpi_wait_extend (struct ddpi_waiter *w, double seconds)
{
    w->deadline += seconds;
}

void ddpi_wait_restart (struct ddpi_waiter *w)
{
    if (w->start != 0)
        w->deadline = ddpi_now () + w->timeout_s;
}

double ddpi_wait_elapsed (const struct ddpi_waiter *w)
{
    return w->start == 0 ? 0 : ddpi_now () - w->start;
}

int ddpi_wait_pipe_read (int fd, double timeout_s)
{
    struct ddpi_waiter w;
    struct stat st;
    int pending = 0;

    if (fstat (fd, &st) < 0 || !S_ISFIFO (st.st_mode))
        return 0;
    ddpi_wait_init (&w, timeout_s, 0);
    /* Linux answers FIONREAD on either end of a pipe. */
    while (ioctl (fd, FIONREAD, &pending) == 0 && pending > 0)
        if (ddpi_wait_step (&w) < 0)
            return DDP_ETIMEDOUT;
    return 0;
}

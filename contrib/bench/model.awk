#!/usr/bin/awk -f
# model.awk - the host backend's cost model (doc/scaling.md), as a program.
#
#   awk -f model.awk -v mode=predict -v alpha=US -v beta=NS -v gamma=NS \
#       [-v nodes="128 1024 16384"] [-v sizes="8 1048576 67108864"]
#   awk -f model.awk -v mode=check -v tsv=DIR [-v cores=2]
#
# predict: for every node count N and allreduce size B (bytes per lane),
#   the algorithm libddp picks (libjob/host/algo.c, default thresholds
#   DDP_SMALL_MAX=32 KiB and DDP_RING_MIN=4 MiB grown by N-1-ceil(log2 N))
#   and its time, plus the barrier: alpha is the latency of one message
#   (microseconds), beta the time per byte sent (ns), gamma the time per
#   byte reduced (ns).  Nodes run in parallel (a real cluster).
# check: fits alpha (2-node barrier) and delta = 2 beta + gamma (2-node
#   64 MiB allreduce) from DIR/ddp-N2n2.tsv, takes the blocking-wake
#   latency alpha_os from nothing (it is what is predicted: see below), and
#   compares the measured 1-rank-per-node sweep (DIR/ddp-scale-N{4,8,16}p1.tsv)
#   with the model of the test cluster, where all N nodes share `cores`
#   CPUs: every step's work is done N/cores times over, and past `cores`
#   processes a message costs a wake-up (alpha_os, fitted at 4 nodes)
#   instead of a spin.
# Costs per lane, from libjob/host/host.h (p = 2^floor(log2 N)):
#   dissemination   ceil(log2 N) alpha
#   doubling        (log2 p + 2[N!=p]) (alpha + B beta) + (log2 p + [N!=p]) B gamma
#   halving         (2 log2 p + 2[N!=p]) alpha + 2 (p-1)/p B beta
#                   + (p-1)/p B gamma + [N!=p] (2 B beta + B gamma)
#   ring            2 (N-1) alpha + 2 (N-1)/N B beta + (N-1)/N B gamma
function lg2c(n,   k) { k = 0; while (2 ^ k < n) k++; return k }
function p2f(n,   p) { p = 1; while (p * 2 <= n) p *= 2; return p }
function ring_from(n, base,   x) { x = n - 1 - lg2c(n); return base * (x > 1 ? x : 1) }
function pick(n, b) {
    if (n == 1) return "local"
    if (b < 32768) return "doubling"
    if (b < ring_from(n, 4194304)) return "halving"
    return "ring"
}
# cost(algo, N, B, alpha us, beta ns, gamma ns) in microseconds
function cost(a, n, b, al, be, ga,   p, f, l) {
    p = p2f(n); f = (n != p); l = log(p) / log(2)
    be /= 1000; ga /= 1000
    if (a == "barrier") return lg2c(n) * al
    if (a == "doubling") return (l + 2 * f) * (al + b * be) + (l + f) * b * ga
    if (a == "halving") return (2 * l + 2 * f) * al + 2 * (p - 1) / p * b * be + \
        (p - 1) / p * b * ga + f * (2 * b * be + b * ga)
    if (a == "ring") return 2 * (n - 1) * al + 2 * (n - 1) / n * b * be + (n - 1) / n * b * ga
    return 0
}
function human(us) {
    if (us >= 1e6) return sprintf("%.2f s", us / 1e6)
    if (us >= 1e3) return sprintf("%.2f ms", us / 1e3)
    return sprintf("%.1f us", us)
}
function hbytes(b) {
    if (b >= 1048576) return (b / 1048576) " MiB"
    if (b >= 1024) return (b / 1024) " KiB"
    return b " B"
}
# tsv_time(file, op, bytes): the slowest rank's median (us) or "".
function tsv_time(file, op, bytes,   line, f, t) {
    t = ""
    while ((getline line < file) > 0) {
        split(line, f, "\t")
        if (f[2] == op && f[5] == bytes) t = f[8]
    }
    close(file)
    return t
}
BEGIN {
    if (nodes == "") nodes = "2 4 8 16 128 1024 16384"
    if (sizes == "") sizes = "8 32768 1048576 16777216 67108864"
    if (mode == "predict") {
        printf "| nodes | barrier |"
        ns = split(sizes, S, " ")
        for (i = 1; i <= ns; i++) printf " allreduce %s |", hbytes(S[i])
        printf "\n|---:|---:|"
        for (i = 1; i <= ns; i++) printf "---|"
        printf "\n"
        nn = split(nodes, N, " ")
        for (j = 1; j <= nn; j++) {
            printf "| %d | %s |", N[j], human(cost("barrier", N[j], 0, alpha, beta, gamma))
            for (i = 1; i <= ns; i++) {
                a = pick(N[j], S[i])
                printf " %s (%s) |", human(cost(a, N[j], S[i], alpha, beta, gamma)), a
            }
            printf "\n"
        }
        exit 0
    }
    if (mode != "check" || tsv == "") {
        print "usage: model.awk -v mode=predict|check ..." > "/dev/stderr"
        exit 2
    }
    if (cores == "") cores = 2
    big = 67108864
    two = tsv "/ddp-N2n2.tsv"
    a2 = tsv_time(two, "barrier", 0) + 0
    t2 = tsv_time(two, "allreduce", big) + 0
    if (a2 <= 0 || t2 <= 0) { print "model.awk: no 2-node results in " two > "/dev/stderr"; exit 1 }
    # N=2 ring: 2 alpha + B beta + B gamma / 2 = 2 alpha + B delta / 2
    delta = 2 * (t2 - 2 * a2) / big * 1000
    b4 = tsv_time(tsv "/ddp-scale-N4p1.tsv", "barrier", 0) + 0
    # 4 nodes: 2 rounds, each done 4/cores times over.
    aos = b4 / (lg2c(4) * 4 / cores)
    printf "Fitted: alpha = %.2f us (2-node barrier, spinning), delta = 2 beta + gamma = %.3f ns/B (2-node 64 MiB allreduce), alpha_os = %.2f us (4-node barrier: a blocking wake-up per message)\n\n", a2, delta, aos
    print "| nodes | op | bytes | algorithm | model us | measured us | measured / model |"
    print "|---:|---|---:|---|---:|---:|---:|"
    split("4 8 16", M, " ")
    for (j = 1; j <= 3; j++) {
        n = M[j]; file = tsv "/ddp-scale-N" n "p1.tsv"; k = n / cores
        m = tsv_time(file, "barrier", 0)
        pred = cost("barrier", n, 0, aos, 0, 0) * k
        if (m != "") printf "| %d | barrier | 0 | dissemination | %.1f | %.1f | %.2f |\n", n, pred, m, m / pred
        m = tsv_time(file, "allreduce", 8)
        pred = cost("doubling", n, 8, aos, 0, 0) * k
        if (m != "") printf "| %d | allreduce | 8 | doubling | %.1f | %.1f | %.2f |\n", n, pred, m, m / pred
        # bandwidth: per-node work (N-1)/N B delta, done N/cores times over
        m = tsv_time(file, "allreduce", big)
        pred = (2 * (n - 1) * aos + (n - 1) / n * big * delta / 1000) * k
        if (m != "") printf "| %d | allreduce | %d | ring | %.0f | %.0f | %.2f |\n", n, big, pred, m, m / pred
    }
}

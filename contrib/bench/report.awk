# report.awk - compare.sh's report: markdown from the benchmark's raw results.
#
#   awk -f report.awk [-v NAME=VALUE...] kind=results results.tsv \
#       [kind=launch cfg=CFG launch-CFG.txt...] [kind=debug init-ddp-debug.err] \
#       [kind=failures failures] [kind=retried retried] [kind=baseline OLD.tsv]
#
# Input files (kind= before each says what it is):
#   results  every TSV row of every run, with the run's name first:
#            run impl op nranks nnodes bytes count iters time_us mean_us
#            min_us algbw_GBps busbw_GBps check (report.h has the ops).
#            Runs: ddp-N1n2, mpi-N2n2 (collectives), ddp-scale-N8p1 (the node
#            sweep), init-ddp-8-3 (init at 8 ranks on 2 nodes, 3rd run),
#            init-mpidefault-2-1, init-ddp-debug.
#   launch   one `srun true` time in ms a line, for configuration cfg.
#   debug    ddp_init's DDP_DEBUG=1 log.
#   failures, retried   one failed (retried) run a line.
#   baseline a results.tsv of an earlier run: ddp's 1- and 2-node times now
#            are compared with it.
# Variables (-v): mode, best_of (rounds: each row is its best), secs, programs, machine, cluster, rt_start, rt_end, load_start,
# load_end, rawdata, reps (init repetitions), scale_ranks ("2 4 8 16 32"),
# mpi_init_ranks (those of scale_ranks MPI_Init was timed at),
# launch_note, nodes (the sweep's, "1,2,4,8,16"), ppn ("1,4"), sizes (the
# sweep's, in bytes), maxnodes (the cluster's), plot (the picture, for the
# report to show), plotdata (a file to write the plot's data to), gloo (1:
# the second peer, gloo-bench.py, was run: its columns are shown),
# gloo_note (how it was run, or why not), sweep_ops (the sweep's
# operations, "barrier,allreduce,allgather"), net (the cluster's network in
# words, or "": all nodes on 127.0.0.1), link_start, link_end (the link
# rate one TCP stream n1 -> n2 reached before and after, Gbit/s, or ""),
# sections (those run, "collectives,scale": the others' tables are left
# out; default all).
#
# With a link rate, the bus bandwidth of allreduce and allgather is set
# against it (section "Against the link"): the higher of the two
# measurements, so that a stream slowed by the machine's load does not make
# the ratios look better than they are.
#
# Ratios are ddp / MPI ("time ratio", "bw ratio") and ddp / gloo ("ddp/gloo
# time", "ddp/gloo bw"); "n/a" where a side is missing.
BEGIN {
    FS = "\t"
    nruns = 0
}

# ---- reading ---------------------------------------------------------------

kind == "results" && FNR > 1 { add_row() }
kind == "launch" && $0 ~ /^[0-9.]+$/ { launch[cfg, ++nlaunch[cfg]] = $0 }
kind == "debug" { debug[++ndebug] = $0 }
kind == "failures" && $0 != "" { failed[++nfailed] = $0 }
kind == "retried" && $0 != "" { retried[++nretried] = $0 }
kind == "baseline" && FNR > 1 { base[$1, $3, $6] = $9; baseline_read = 1 }
# --best-of: every round's time of a row, its wrong results left out.
kind == "rounds" && FNR > 1 && $14 !~ /^FAIL/ && $9 + 0 > 0 {
    rtime[$1, $3, $6, ++nround[$1, $3, $6]] = $9
}

# A results row: by run, op and bytes; by configuration for the sweep.
function add_row(   run, k, cfg) {
    run = $1
    if (!(run in seen)) { seen[run] = 1; runs[++nruns] = run }
    k = run SUBSEP $3 SUBSEP $6
    if ($3 ~ /_sent$/) { sent[run, substr($3, 1, length($3) - 5), $6] = $7; return }
    if ($3 ~ /^rss_/) { rss[run, $3] = $6; rss_n[run, $3] = $7 }
    t[k] = $9; bw[k] = $13; ck[k] = $14; cnt[k] = $7
    if ($14 ~ /^FAIL/) nfail++
    else if ($14 == "ok") nok++
    if ($3 !~ /^(init|rss)/ && !((run, $3, $6) in order_seen)) {
        order_seen[run, $3, $6] = 1
        order[run, ++nrows[run]] = $3 SUBSEP $6
    }
    if (run ~ /^init-(mpidefault|ddp-debug)/) return
    runcfg[run] = $5 SUBSEP $4
    # The same configuration measured by a collectives and a sweep run: the
    # first run read gives the table its row.
    cfg = $2 SUBSEP $5 SUBSEP $4
    if ($3 == "init") inits[cfg, ++ninits[cfg]] = $9
    else if (!((cfg, $3, $6) in where)) where[cfg, $3, $6] = run
}

# ---- numbers ----------------------------------------------------------------

function median(a, n,   i, j, v, s) {
    if (n == 0) return ""
    for (i = 1; i <= n; i++) s[i] = a[i]
    for (i = 2; i <= n; i++) {         # insertion sort, numerically
        v = s[i]
        for (j = i - 1; j >= 1 && s[j] + 0 > v + 0; j--) s[j + 1] = s[j]
        s[j + 1] = v
    }
    if (n % 2) return s[(n + 1) / 2]
    return (s[n / 2] + s[n / 2 + 1]) / 2
}

# round_median(run, op, b): the median over the rounds of --best-of of a
# row's time ("" without them).
function round_median(run, op, b,   i, n, a) {
    n = nround[run, op, b] + 0
    for (i = 1; i <= n; i++) a[i] = rtime[run, op, b, i]
    return median(a, n)
}

# ratio(a, b[, fmt]): a / b, by default to two decimals, or two significant
# digits below 0.1 (ddp against gloo's small messages: 0.0025).
function ratio(a, b, fmt) {
    if (a == "" || b == "" || a == "n/a" || b == "n/a" || b + 0 == 0) return "n/a"
    if (fmt == "" && a / b < 0.1) fmt = "%.2g"
    return sprintf(fmt == "" ? "%.2f" : fmt, a / b)
}

function na(x) { return x == "" ? "n/a" : x }

# ran(section): whether compare.sh ran that section (-v sections; unset:
# all of them).
function ran(section) {
    return sections == "" || index("," sections ",", "," section ",") > 0
}

function verdict(v, op, limit) {
    if (v == "" || v ~ /^n\/a/) return "n/a"
    if (op == "<=") return (v + 0 <= limit + 0) ? "yes" : "**NO**"
    return (v + 0 >= limit + 0) ? "yes" : "**NO**"
}

# cell(run, op, bytes, what): time, busbw, check or count of a row, or "".
function cell(run, op, bytes, what,   k) {
    k = run SUBSEP op SUBSEP bytes
    if (!(k in t)) return ""
    if (what == "time") return t[k]
    if (what == "bw") return bw[k]
    if (what == "check") return ck[k]
    return cnt[k]
}

# kib(run, op): the size an rss_* row gives, in KiB, or "".
function kib(run, op) {
    if (!((run, op) in rss)) return ""
    return sprintf("%.0f", rss[run, op] / 1024)
}

# ---- table rows -------------------------------------------------------------
# A row is built cell by cell in row_: row_start(first cell), cell_(x)...,
# row_end() prints it.  The gloo cells are added only when gloo ran (G).

function row_start(x) { row_ = "| " x }
function cell_(x) { row_ = row_ " | " x }
function row_end() { print row_ " |" }

# The header cells of the three-way comparison: times, ratios, bandwidths,
# ratios, checks; and its alignment row (n: cells before them).
function peer_header(first,   h) {
    h = first " | ddp us | MPI us" (G ? " | gloo us" : "") " | time ratio" \
        (G ? " | ddp/gloo time" : "") " | ddp busbw GB/s | MPI busbw GB/s" \
        (G ? " | gloo busbw GB/s" : "") " | bw ratio" (G ? " | ddp/gloo bw" : "")
    return h
}
function align(n, numeric, text,   s, i) {
    s = "|"
    for (i = 1; i <= n; i++) s = s "---|"
    for (i = 1; i <= numeric; i++) s = s "---:|"
    for (i = 1; i <= text; i++) s = s "---|"
    return s
}

# The cells of one measured row of runs d, m and g (ddp, MPI, gloo): times,
# ratios, bandwidths (not for the barrier), ratios, and (unless nocheck)
# the checks.
function peer_cells(d, m, g, op, b, nocheck,   barrier) {
    barrier = op == "barrier"
    cell_(na(cell(d, op, b, "time"))); cell_(na(cell(m, op, b, "time")))
    if (G) cell_(na(cell(g, op, b, "time")))
    cell_(ratio(cell(d, op, b, "time"), cell(m, op, b, "time")))
    if (G) cell_(ratio(cell(d, op, b, "time"), cell(g, op, b, "time")))
    cell_(barrier ? "" : na(cell(d, op, b, "bw")))
    cell_(barrier ? "" : na(cell(m, op, b, "bw")))
    if (G) cell_(barrier ? "" : na(cell(g, op, b, "bw")))
    cell_(barrier ? "" : ratio(cell(d, op, b, "bw"), cell(m, op, b, "bw")))
    if (G) cell_(barrier ? "" : ratio(cell(d, op, b, "bw"), cell(g, op, b, "bw")))
    if (!nocheck) checks_cell(d, m, g, op, b)
}
function checks_cell(d, m, g, op, b) {
    cell_(na(cell(d, op, b, "check")) " / " na(cell(m, op, b, "check")) \
        (G ? " / " na(cell(g, op, b, "check")) : ""))
}
function checks_header() { return "checks ddp / MPI" (G ? " / gloo" : "") }

# ---- the collectives tables ---------------------------------------------------

function collectives(cfg,   d, m, g, first, i, op, b, k, nc, j) {
    d = "ddp-" cfg; m = "mpi-" cfg; g = "gloo-" cfg
    first = (d in seen) ? d : (m in seen) ? m : g
    print "| " peer_header("op | bytes") " | " checks_header() " |"
    nc = G ? 10 : 6
    print align(1, nc + 1, 1)
    if (!(first in seen)) {
        row_start("(no results: every run failed)")
        for (j = 1; j <= nc + 2; j++) cell_("")
        row_end()
        return
    }
    for (i = 1; i <= nrows[first]; i++) {
        split(order[first, i], k, SUBSEP); op = k[1]; b = k[2]
        row_start(op); cell_(b)
        peer_cells(d, m, g, op, b)
        row_end()
    }
}

# ---- init ---------------------------------------------------------------------

# init_ms(impl, n, op): median over the runs init-IMPL-N-* of op's time
# (default init), in ms, or "".
function init_ms(impl, n, op,   i, r, v, nv, prefix) {
    prefix = "init-" impl "-" n "-"
    nv = 0
    for (i = 1; i <= nruns; i++) {
        r = runs[i]
        if (index(r, prefix) != 1) continue
        if (cell(r, op == "" ? "init" : op, 0, "time") == "") continue
        if (cell(r, op == "" ? "init" : op, 0, "time") + 0 < 0) continue
        v[++nv] = cell(r, op == "" ? "init" : op, 0, "time")
    }
    if (nv == 0) return ""
    return sprintf("%.2f", median(v, nv) / 1000)
}

# init_fences(impl, n): the most fences over the runs init-IMPL-N-*, or "".
function init_fences(impl, n,   i, r, f, best) {
    best = ""
    for (i = 1; i <= nruns; i++) {
        r = runs[i]
        if (index(r, "init-" impl "-" n "-") != 1) continue
        f = cell(r, "init_fences", 0, "count")
        if (f != "" && (best == "" || f + 0 > best + 0)) best = f
    }
    return best
}

function fences_cell(f) { return (f == "" || f == "-1") ? "n/a" : f }

function init_section(   n, i, d, m, nn, ns, p) {
    print "## Init: ddp_init against MPI_Init (-N2, ranks spread over both nodes)"
    print ""
    print "Slowest rank's init time, median of " reps " run(s).  PMIx fences and the time"
    print "inside PMIx_Init (slowest rank; part of either init) are measured by"
    print "ddp-bench-fences.so (LD_PRELOAD)."
    print ""
    print "| ranks | ddp_init ms | MPI_Init ms | ratio | ddp fences | MPI fences | PMIx_Init in ddp_init ms | PMIx_Init in MPI_Init ms |"
    print "|---:|---:|---:|---:|---:|---:|---:|---:|"
    ns = split(scale_ranks, nn, " ")
    for (i = 1; i <= ns; i++) {
        n = nn[i]; d = init_ms("ddp", n); m = init_ms("mpi", n)
        printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", n, na(d), na(m),
            ratio(d, m), fences_cell(init_fences("ddp", n)),
            fences_cell(init_fences("mpi", n)),
            na(init_ms("ddp", n, "init_pmix_init")),
            na(init_ms("mpi", n, "init_pmix_init"))
    }
    print ""
    if (mpi_init_ranks != scale_ranks)
        print "MPI_Init timed at " mpi_init_ranks " ranks only (" mode " mode; the full run times every count)."
    print "MPI_Init with Debian's defaults (UCX probed first), 2 ranks: " na(init_ms("mpidefault", 2)) " ms."
    print ""
    print "ddp_init phases (DDP_DEBUG=1, -N2 -n2; slowest rank per phase):"
    print ""
    phases()
    print ""
    print "The log:"
    print ""
    print "```"
    for (i = 1; i <= ndebug && p < 40; i++)
        if (debug[i] !~ /^[ \t]*$/) { print debug[i]; p++ }
    print "```"
    print ""
}

# The "| phase | ms |" rows from the DDP_DEBUG lines "init: bootstrap 34.6
# ms, backend setup 1.5 ms, ..., total 36.5 ms": the largest value over the
# ranks for each phase, in the log's order.
function phases(   i, j, line, f, nf, name, v, np, order_, max_) {
    np = 0
    for (i = 1; i <= ndebug; i++) {
        line = debug[i]
        if (line !~ /init: [a-z ]+ [0-9.]+ ms/) continue
        sub(/.*init: /, "", line)
        nf = split(line, f, ", ")
        for (j = 1; j <= nf; j++) {
            if (f[j] !~ /^[a-zA-Z][a-zA-Z _-]* [0-9.]+ ms$/) continue
            name = f[j]; sub(/ [0-9.]+ ms$/, "", name)
            v = f[j]; sub(/ ms$/, "", v); sub(/.* /, "", v)
            if (!(name in max_)) order_[++np] = name
            if (!(name in max_) || v + 0 > max_[name]) max_[name] = v + 0
        }
    }
    if (np == 0) { print "(no phase timings found in the DDP_DEBUG log)"; return }
    print "| phase | ms |"
    print "|---|---:|"
    for (i = 1; i <= np; i++) printf "| %s | %.3f |\n", order_[i], max_[order_[i]]
}

# ---- launch cost and memory -------------------------------------------------

function launch_median(c,   i, v) {
    for (i = 1; i <= nlaunch[c]; i++) v[i] = launch[c, i]
    return median(v, nlaunch[c] + 0)
}

function launch_section(   i, c, label, base_) {
    print "## Launch cost: `srun -N2 -n8 true`"
    print ""
    if (launch_note != "") { print launch_note; print "" }
    base_ = launch_median("none")
    print "| configuration | median ms | runs | ratio to no plugin |"
    print "|---|---:|---:|---:|"
    split("none none-pmix plugin plugin-ddp", c, " ")
    label["none"] = "no plugin"
    label["none-pmix"] = "no plugin, --mpi=pmix (reference)"
    label["plugin"] = "plugin loaded, no --ddp"
    label["plugin-ddp"] = "plugin loaded, --ddp=host"
    for (i = 1; i <= 4; i++)
        printf "| %s | %s | %d | %s |\n", label[c[i]], na(launch_median(c[i])),
            nlaunch[c[i]], ratio(launch_median(c[i]), base_, "%.3f")
    print ""
}

function memory_section(   r, i) {
    print "## Memory (VmRSS, max over ranks)"
    print ""
    print "| run | RSS added by init KiB | RSS after 1000 allreduces KiB | growth KiB | over N 8-byte allreduces |"
    print "|---|---:|---:|---:|---:|"
    split("ddp-N1n2 ddp-N2n2 mpi-N1n2 mpi-N2n2", r, " ")
    for (i = 1; i <= 4; i++) {
        if (!(r[i] in seen)) continue
        printf "| %s | %s | %s | %s | %s |\n", r[i], kib(r[i], "rss_init"),
            kib(r[i], "rss_base"), kib(r[i], "rss_growth"), rss_n[r[i], "rss_growth"]
    }
    print ""
}

# ---- the node sweep -------------------------------------------------------------

# sw(impl, nodes, ranks, op, bytes, what): a value of the sweep's
# configuration, from whichever run measured it, or "".
function sw(impl, n, r, op, b, what,   k) {
    k = impl SUBSEP n SUBSEP r SUBSEP op SUBSEP b
    if (!(k in where)) return ""
    return cell(where[k], op, b, what)
}

function sw_sent(impl, n, r, op, b,   k) {
    k = impl SUBSEP n SUBSEP r SUBSEP op SUBSEP b
    if (!(k in where) || !((where[k], op, b) in sent)) return ""
    return sent[where[k], op, b]
}

# node_init(impl, n, r): median init over every run of that shape, in ms.
function node_init(impl, n, r,   k, i, v) {
    k = impl SUBSEP n SUBSEP r
    for (i = 1; i <= ninits[k]; i++) v[i] = inits[k, i]
    if (ninits[k] + 0 == 0) return ""
    return sprintf("%.2f", median(v, ninits[k]) / 1000)
}

# sent_cell(n, r, b): bytes the busiest leader sent per allreduce against
# 2(N-1)/N * B, the least a leader of N nodes must send.
function sent_cell(n, r, b,   s) {
    s = sw_sent("ddp", n, r, "allreduce", b)
    if (s == "" || n < 2) return "n/a"
    return sprintf("%.2f", s / (2 * (n - 1) / n * b))
}

function largest(   i, m) {
    m = 0
    for (i = 1; i <= nsizes; i++) if (size_[i] + 0 > m) m = size_[i] + 0
    return m
}

# worst_bw(n, r): the lowest allreduce busbw ratio over sizes >= 1 MiB.
function worst_bw(n, r,   i, v, w) {
    w = ""
    for (i = 1; i <= nsizes; i++) {
        if (size_[i] + 0 < 1048576) continue
        v = ratio(sw("ddp", n, r, "allreduce", size_[i], "bw"),
                  sw("mpi", n, r, "allreduce", size_[i], "bw"))
        if (v != "n/a" && (w == "" || v + 0 < w + 0)) w = v
    }
    return w
}

# time_ratio(n, r, op, b[, peer]), bw_ratio(n, r, b[, peer]): ddp / the
# peer (default mpi) in the sweep.
function time_ratio(n, r, op, b, peer) {
    return ratio(sw("ddp", n, r, op, b, "time"), sw(peer == "" ? "mpi" : peer, n, r, op, b, "time"))
}

function bw_ratio(n, r, b, peer) {
    return ratio(sw("ddp", n, r, "allreduce", b, "bw"), sw(peer == "" ? "mpi" : peer, n, r, "allreduce", b, "bw"))
}

function run_nodes(n) { return n + 0 <= maxnodes + 0 }

# swrun(impl, n, r, op, b): the run that measured it for the sweep, or "".
function swrun(impl, n, r, op, b,   k) {
    k = impl SUBSEP n SUBSEP r SUBSEP op SUBSEP b
    return (k in where) ? where[k] : ""
}

function sweep_rows(n, p,   r, i, j, b, op, d, m, g) {
    r = n * p
    for (j = 1; j <= nops; j++) {
        op = op_[j]
        for (i = op == "barrier" ? 0 : 1; i <= (op == "barrier" ? 0 : nsizes); i++) {
            b = i == 0 ? 0 : size_[i]
            d = swrun("ddp", n, r, op, b); m = swrun("mpi", n, r, op, b)
            g = swrun("gloo", n, r, op, b)
            row_start(n); cell_(r); cell_(op); cell_(b)
            peer_cells(d, m, g, op, b, 1)
            cell_(op == "allreduce" ? sent_cell(n, r, b) : "")
            checks_cell(d, m, g, op, b)
            row_end()
        }
    }
}

# ---- against the link ---------------------------------------------------------

# link_gbs(): the link rate the ratios are against, in GB/s (bytes), or "".
function link_gbs(   a, b) {
    a = link_start + 0; b = link_end + 0
    if (a < b) a = b
    return a > 0 ? a / 8 : ""
}

# of_link(bw): a bus bandwidth in GB/s as a fraction of the link, or "n/a".
function of_link(bw) {
    if (bw == "" || link_gbs() == "") return "n/a"
    return sprintf("%.2f", bw / link_gbs())
}

# on_link(op): whether op's bus bandwidth is set against the link.
function on_link(op) {
    return op ~ /^(allreduce|allgather|reduce_scatter|group_allreduce)$/
}

# link_rows(n, p): the allreduce, allgather, reduce_scatter and
# group_allreduce rows of n nodes x p ranks.
function link_rows(n, p,   r, i, j, b, op) {
    r = n * p
    for (j = 1; j <= nops; j++) {
        op = op_[j]
        if (!on_link(op)) continue
        for (i = 1; i <= nsizes; i++) {
            b = size_[i]
            row_start(n); cell_(r); cell_(op); cell_(b)
            cell_(na(sw("ddp", n, r, op, b, "bw"))); cell_(na(sw("mpi", n, r, op, b, "bw")))
            if (G) cell_(na(sw("gloo", n, r, op, b, "bw")))
            cell_(of_link(sw("ddp", n, r, op, b, "bw"))); cell_(of_link(sw("mpi", n, r, op, b, "bw")))
            if (G) cell_(of_link(sw("gloo", n, r, op, b, "bw")))
            row_end()
        }
    }
}

function link_section(   i, j, n) {
    print "## Against the link"
    print ""
    print "Bus bandwidth as nccl-tests reports it: allreduce 2(n-1)/n x bytes / time,"
    print "allgather and reduce_scatter (n-1)/n x total bytes / time (n ranks),"
    print "group_allreduce 2(g-1)/g x bytes / time (g = ceil(n/2), a group's ranks);"
    print "each is the traffic one"
    print "rank's link carries per second in each direction with an optimal"
    print "algorithm, so it cannot exceed the link rate when one rank runs on each"
    print "node.  \"/ link\": against " sprintf("%.3f", link_gbs() * 8) " Gbit/s = " \
        sprintf("%.4f", link_gbs()) " GB/s, the higher of the two measured link rates."
    print "With several ranks per node the ranks of a node share its link: there the"
    print "ratio's bound is 1 only for the node leaders' share."
    print ""
    print "| nodes | ranks | op | bytes | ddp busbw GB/s | MPI busbw GB/s" (G ? " | gloo busbw GB/s" : "") \
        " | ddp / link | MPI / link" (G ? " | gloo / link" : "") " |"
    print "|---:|---:|---|" substr(align(0, G ? 7 : 5, 0), 2)
    for (j = 1; j <= nppn; j++)
        for (i = 1; i <= nnode; i++) {
            n = node_[i]
            if (n >= 2 && run_nodes(n)) link_rows(n, ppn_[j])
        }
    print ""
}

# link_targets(): the issue's goal, bus bandwidth >= 0.9 of the link at the
# largest size, each op at every node count >= 2 with one rank per node
# (group_allreduce: from 4 nodes on, where its groups have 2 ranks).
function link_targets(   i, n, j, op, big, v) {
    big = largest()
    print "## Targets against the link (issue 40)"
    print ""
    print "| target | goal | measured | met |"
    print "|---|---|---:|---|"
    for (j = 1; j <= nops; j++) {
        op = op_[j]
        if (!on_link(op)) continue
        for (i = 1; i <= nnode; i++) {
            n = node_[i]
            if (n < (op == "group_allreduce" ? 4 : 2)) continue
            v = run_nodes(n) ? of_link(sw("ddp", n, n, op, big, "bw")) : "n/a (not run)"
            target(n " x 1 rank: " op " " human(big) " busbw / link", ">=", "0.90", v)
        }
    }
    print ""
}

function plot_data(   i, j, n, r, big) {
    big = largest()
    print "# nodes ddp_bw_1MiB mpi_bw_1MiB ddp_bw_" big " mpi_bw_" big \
        " ddp_us_8B mpi_us_8B ddp_us_barrier mpi_us_barrier gloo_bw_1MiB gloo_bw_" big \
        " gloo_us_8B gloo_us_barrier ddp_agbw_" big " mpi_agbw_" big " gloo_agbw_" big \
        "; a block per ppn: " ppn > plotdata
    for (j = 1; j <= nppn; j++) {
        for (i = 1; i <= nnode; i++) {
            n = node_[i]; r = n * ppn_[j]
            if (!run_nodes(n)) continue
            printf "%s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s\n", n,
                qb(sw("ddp", n, r, "allreduce", 1048576, "bw")),
                qb(sw("mpi", n, r, "allreduce", 1048576, "bw")),
                qb(sw("ddp", n, r, "allreduce", big, "bw")),
                qb(sw("mpi", n, r, "allreduce", big, "bw")),
                q(sw("ddp", n, r, "allreduce", 8, "time")),
                q(sw("mpi", n, r, "allreduce", 8, "time")),
                q(sw("ddp", n, r, "barrier", 0, "time")),
                q(sw("mpi", n, r, "barrier", 0, "time")),
                qb(sw("gloo", n, r, "allreduce", 1048576, "bw")),
                qb(sw("gloo", n, r, "allreduce", big, "bw")),
                q(sw("gloo", n, r, "allreduce", 8, "time")),
                q(sw("gloo", n, r, "barrier", 0, "time")),
                qb(sw("ddp", n, r, "allgather", big, "bw")),
                qb(sw("mpi", n, r, "allgather", big, "bw")),
                qb(sw("gloo", n, r, "allgather", big, "bw")) > plotdata
        }
        printf "\n\n" > plotdata
    }
    close(plotdata)
}

function q(x) { return x == "" ? "?" : x }

# qb(x): a bandwidth for the plot; "?" where none, or 0 (one rank moves
# nothing between ranks: busbw is 0 by definition).
function qb(x) { return (x == "" || x + 0 == 0) ? "?" : x }

# human(b): a size as the tables' headings name it (1 MiB, 64 KiB, 8 B).
function human(b) {
    if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
    if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
    return b " B"
}

function sweep_section(   i, j, n, p, r, skipped) {
    print "## Scaling: " ops_text " on 1 to " node_[nnode] " nodes"
    print ""
    print (best_of > 1 ? "The best of " best_of " rounds" : "One run") " per configuration (`-N NODES --ntasks-per-node PPN`), " ops_text
    print "only, sizes " sizes_text "; the 1- and 2-node"
    print "configurations of the tables above are not run again.  Init: median"
    print "over every run of that shape.  Sent: bytes the busiest node leader sent"
    print "per allreduce against 2(N-1)/N x bytes (n/a: ddp-bench does not read"
    print "libddp's traffic counters per size; tests/t0260 checks them against"
    print "the formulas of doc/scaling.md)."
    print ""
    if (plot != "") { print "![" ops_text " against node count](" plot ")"; print "" }
    skipped = ""
    for (i = 1; i <= nnode; i++)
        if (!run_nodes(node_[i])) skipped = skipped (skipped == "" ? "" : ", ") node_[i]
    if (skipped != "") {
        print "Not run: " skipped " nodes (the cluster has " maxnodes ")."
        print ""
    }
    if (G) {
        print "Ratios are ddp / Open MPI; the columns \"ddp/gloo\" are ddp / gloo."
        print ""
    }
    print "| nodes | ranks | barrier time ratio" (G ? " | barrier ddp/gloo" : "") \
        " | 8 B allreduce time ratio" (G ? " | 8 B ddp/gloo" : "") \
        " | 1 MiB bw ratio" (G ? " | 1 MiB bw ddp/gloo" : "") " | " human(largest()) \
        " bw ratio" (G ? " | " human(largest()) " bw ddp/gloo" : "") \
        " | ddp_init ms | MPI_Init ms | init ratio |"
    print align(0, G ? 13 : 9, 0)
    for (j = 1; j <= nppn; j++)
        for (i = 1; i <= nnode; i++) {
            n = node_[i]; r = n * ppn_[j]
            if (!run_nodes(n)) continue
            row_start(n); cell_(r)
            cell_(time_ratio(n, r, "barrier", 0))
            if (G) cell_(time_ratio(n, r, "barrier", 0, "gloo"))
            cell_(time_ratio(n, r, "allreduce", 8))
            if (G) cell_(time_ratio(n, r, "allreduce", 8, "gloo"))
            cell_(bw_ratio(n, r, 1048576))
            if (G) cell_(bw_ratio(n, r, 1048576, "gloo"))
            cell_(bw_ratio(n, r, largest()))
            if (G) cell_(bw_ratio(n, r, largest(), "gloo"))
            cell_(na(node_init("ddp", n, r))); cell_(na(node_init("mpi", n, r)))
            cell_(ratio(node_init("ddp", n, r), node_init("mpi", n, r)))
            row_end()
        }
    print ""
    for (j = 1; j <= nppn; j++) {
        p = ppn_[j]
        print "### " p " rank" (p == 1 ? "" : "s") " per node"
        print ""
        print "| " peer_header("nodes | ranks | op | bytes") " | sent / 2(N-1)/N B | " checks_header() " |"
        print "|---:|---:|---|" substr(align(0, G ? 12 : 8, 1), 2)
        for (i = 1; i <= nnode; i++)
            if (run_nodes(node_[i])) sweep_rows(node_[i], p)
        print ""
    }
    if (plotdata != "") plot_data()
}

# ---- reduce-scatter, group all-reduce, overlap ----------------------------------

function swept_op(op,   j) {
    for (j = 1; j <= nops; j++) if (op_[j] == op) return 1
    return 0
}

# worst_time(n, r, op): the highest ddp / MPI time ratio of op over the
# sweep's sizes at n nodes x r ranks, with its size ("1.04 at 65536"), or "".
function worst_time(n, r, op,   i, v, w, wb) {
    w = ""
    for (i = 1; i <= nsizes; i++) {
        v = time_ratio(n, r, op, size_[i])
        if (v != "n/a" && (w == "" || v + 0 > w + 0)) { w = v; wb = size_[i] }
    }
    return w == "" ? "" : w " at " human(wb)
}

# The goals of the communicators issue: reduce_scatter and group_allreduce
# no slower than Open MPI's on any row (time ratio <= 1.0 at every size).
function comm_targets(   j, p, i, n, op, k, ops, v, w) {
    split("reduce_scatter group_allreduce", ops, " ")
    print "## Targets: reduce-scatter and group all-reduce against Open MPI"
    print ""
    print "The worst ddp / MPI time ratio over the sizes " sizes_text " (goal: every"
    print "row at most 1.0); against the link, the largest size's bus bandwidth"
    print "(section \"Targets against the link\", on a network)."
    print ""
    print "| target | goal | measured | met |"
    print "|---|---|---:|---|"
    for (k = 1; k <= 2; k++) {
        op = ops[k]
        if (!swept_op(op)) continue
        for (j = 1; j <= nppn; j++) {
            p = ppn_[j]
            for (i = 1; i <= nnode; i++) {
                n = node_[i]
                if (!run_nodes(n)) continue
                v = worst_time(n, n * p, op)
                split(v, w, " ")
                printf "| %s x %s rank%s: %s time ddp/MPI, worst size | <= 1.0 | %s | %s |\n",
                    n, p, p == 1 ? "" : "s", op, na(v), verdict(w[1], "<=", "1.0")
            }
        }
    }
    print ""
}

# hidden(run, b): the share of the allreduce an overlap row hid:
# (allreduce then compute - overlapped) / allreduce, or "n/a".
function hidden(run, b,   a, s, o) {
    a = cell(run, "overlap_allreduce", b, "time")
    s = cell(run, "overlap_seq", b, "time")
    o = cell(run, "overlap", b, "time")
    if (run == "" || a == "" || s == "" || o == "" || a + 0 <= 0) return "n/a"
    return sprintf("%.2f", (s - o) / a)
}

function overlap_section(   j, p, i, n, r, k, b, d, m) {
    print "## Overlap: a nonblocking all-reduce around a compute loop"
    print ""
    print "At each size: the blocking allreduce alone; a compute loop (64 multiply-adds"
    print "a unit on an array in L1) calibrated to take as long on the slowest rank;"
    print "the allreduce then the loop (\"one after the other\"); and"
    print "ddp_comm_iallreduce / MPI_Iallreduce started, the loop, ddp_wait / MPI_Wait"
    print "(no MPI_Test in the loop) (\"overlapped\").  Hidden = (one after the other -"
    print "overlapped) / allreduce: 1 when the whole allreduce ran behind the loop, 0"
    print "when none of it did.  Times: per-round median, slowest rank."
    print ""
    print "| nodes | ranks | bytes | ddp allreduce us | ddp compute us | ddp one after the other us | ddp overlapped us | ddp hidden | MPI allreduce us | MPI one after the other us | MPI overlapped us | MPI hidden | overlapped time ratio | " checks_header() " |"
    print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    for (j = 1; j <= nppn; j++)
        for (i = 1; i <= nnode; i++) {
            n = node_[i]; p = ppn_[j]; r = n * p
            if (!run_nodes(n)) continue
            for (k = 1; k <= nsizes; k++) {
                b = size_[k]
                d = swrun("ddp", n, r, "overlap", b); m = swrun("mpi", n, r, "overlap", b)
                row_start(n); cell_(r); cell_(b)
                cell_(na(cell(d, "overlap_allreduce", b, "time")))
                cell_(na(cell(d, "overlap_compute", b, "time")))
                cell_(na(cell(d, "overlap_seq", b, "time")))
                cell_(na(cell(d, "overlap", b, "time")))
                cell_(hidden(d, b))
                cell_(na(cell(m, "overlap_allreduce", b, "time")))
                cell_(na(cell(m, "overlap_seq", b, "time")))
                cell_(na(cell(m, "overlap", b, "time")))
                cell_(hidden(m, b))
                cell_(ratio(cell(d, "overlap", b, "time"), cell(m, "overlap", b, "time")))
                cell_(na(cell(d, "overlap", b, "check")) " / " na(cell(m, "overlap", b, "check")) \
                    (G ? " / n/a" : ""))
                row_end()
            }
        }
    print ""
}

# ---- targets ------------------------------------------------------------------

function target(name, op, limit, v) {
    printf "| %s | %s %s | %s | %s |\n", name, op, limit, na(v), verdict(v, op, limit)
}

function issue8_targets(   big, v, w, i, n, nn, ns, f, fl, fv, g, b, wn, fseen) {
    print "## Targets (issue 8)"
    print ""
    print "| target | goal | measured | met |"
    print "|---|---|---:|---|"
    target("1 node: barrier time ddp/MPI", "<=", "1.0",
        ratio(cell("ddp-N1n2", "barrier", 0, "time"), cell("mpi-N1n2", "barrier", 0, "time")))
    target("1 node: 8 B allreduce time ddp/MPI", "<=", "1.0",
        ratio(cell("ddp-N1n2", "allreduce", 8, "time"), cell("mpi-N1n2", "allreduce", 8, "time")))
    target("1 node: 1 MiB allreduce bandwidth ddp/MPI", ">=", "1.0",
        ratio(cell("ddp-N1n2", "allreduce", 1048576, "bw"), cell("mpi-N1n2", "allreduce", 1048576, "bw")))
    target("2 nodes: barrier time ddp/MPI", "<=", "1.5",
        ratio(cell("ddp-N2n2", "barrier", 0, "time"), cell("mpi-N2n2", "barrier", 0, "time")))
    target("2 nodes: 8 B allreduce time ddp/MPI", "<=", "1.5",
        ratio(cell("ddp-N2n2", "allreduce", 8, "time"), cell("mpi-N2n2", "allreduce", 8, "time")))
    big = largest_run_size("ddp-N2n2"); if (big == "") big = largest_run_size("mpi-N2n2")
    target("2 nodes: " (big == "" ? "largest" : big) " B allreduce bandwidth ddp/MPI", ">=", "1.0",
        ratio(cell("ddp-N2n2", "allreduce", big, "bw"), cell("mpi-N2n2", "allreduce", big, "bw")))
    target("ddp_init / MPI_Init, 2 ranks", "<=", "0.5", ratio(init_ms("ddp", 2), init_ms("mpi", 2)))
    w = ""; fl = ""; wn = ""
    ns = split(scale_ranks, nn, " ")
    for (i = 1; i <= ns; i++) {
        v = ratio(init_ms("ddp", nn[i]), init_ms("mpi", nn[i]))
        if (v != "n/a" && (w == "" || v + 0 > w + 0)) w = v
        if (v != "n/a") wn = nn[i]
        f = init_fences("ddp", nn[i])
        if (f != "" && !((f) in fseen)) { fseen[f] = 1; fl = fl (fl == "" ? "" : " ") f }
    }
    # Over the counts both were timed at (--short: MPI up to 8 ranks).
    target("ddp_init / MPI_Init, worst of " nn[1] ".." (wn == "" ? nn[ns] : wn) " ranks",
        "<=", "0.5", w)
    fv = "n/a"
    if (fl == "-1") fl = "not counted"
    # Two: the backend choice every rank agrees on (libjob/core/choice.h),
    # then the backend's own set-up exchange.
    else if (fl == "2") fv = "yes"
    else if (fl != "") fv = "**NO**"
    printf "| PMIx fences in ddp_init, %s..%s ranks | 2 | %s | %s |\n", nn[1], nn[ns], na(fl), fv
    target("plugin loaded, no --ddp: launch ratio", "<=", "1.02",
        ratio(launch_median("plugin"), launch_median("none"), "%.3f"))
    target("plugin, --ddp=host: launch ratio", "<=", "1.05",
        ratio(launch_median("plugin-ddp"), launch_median("none"), "%.3f"))
    g = kib("ddp-N2n2", "rss_growth"); b = rss["ddp-N2n2", "rss_base"]
    printf "| ddp RSS growth over %s allreduces (-N2 -n2) | flat (<= 64 KiB or 1%%) | %s KiB | %s |\n",
        rss_n["ddp-N2n2", "rss_growth"], na(g),
        g == "" ? "n/a" : ((g + 0 <= 64 || g * 1024 <= b / 100) ? "yes" : "**NO**")
    print "| NCCL: ddp within 2% / 2 us of raw NCCL | | n/a | n/a (no GPU on this machine) |"
    print ""
}

function largest_run_size(run,   i, k, b) {
    b = ""
    for (i = 1; i <= nrows[run]; i++) {
        split(order[run, i], k, SUBSEP)
        if (k[1] == "allreduce") b = k[2]
    }
    return b
}

# not_run(n): why a sweep target at n nodes has no value, or "".
function not_run(n,   i, listed) {
    for (i = 1; i <= nnode; i++) if (node_[i] + 0 == n) listed = 1
    if (!listed) return "n/a (" n " nodes not in --nodes)"
    if (!run_nodes(n)) return "n/a (not run: the cluster has " maxnodes " nodes)"
    return ""
}

function scale_target(name, op, limit, n, v,   why) {
    why = not_run(n)
    if (why != "") v = why
    target(name, op, limit, v)
}

# regress(cfg): ddp's worst time now / in the baseline over barrier, 8 B and
# 1 MiB allreduce of run ddp-CFG.
function regress(cfg,   r, i, w, v, op, b, spec, s) {
    if (!have_baseline) return "n/a (no --baseline)"
    r = "ddp-" cfg; w = ""
    split("barrier:0 allreduce:8 allreduce:1048576", spec, " ")
    for (i = 1; i <= 3; i++) {
        split(spec[i], s, ":"); op = s[1]; b = s[2]
        if (!((r, op, b) in base)) continue
        v = ratio(cell(r, op, b, "time"), base[r, op, b])
        if (v != "n/a" && (w == "" || v + 0 > w + 0)) w = v
    }
    return w
}

function scale_targets(   j, p, r, i, n, label) {
    print "## Scaling targets (1 to 16 nodes)"
    print ""
    print "| target | goal | measured | met |"
    print "|---|---|---:|---|"
    for (j = 1; nodes != "" && j <= nppn; j++) {
        p = ppn_[j]
        label = " x " p " rank" (p == 1 ? "" : "s")
        split("4 8 16", n, " ")
        for (i = 1; i <= 3; i++)
            scale_target(n[i] label ": allreduce busbw ddp/MPI, worst of >= 1 MiB",
                ">=", "1.0", n[i], worst_bw(n[i], n[i] * p))
        for (i = 2; i <= 3; i++)
            scale_target(n[i] label ": 8 B allreduce time ddp/MPI", "<=", "1.0",
                n[i], time_ratio(n[i], n[i] * p, "allreduce", 8))
        for (i = 2; i <= 3; i++)
            scale_target(n[i] label ": barrier time ddp/MPI", "<=", "1.0",
                n[i], time_ratio(n[i], n[i] * p, "barrier", 0))
        scale_target("16" label ": ddp_init / MPI_Init", "<=", "1.0", 16,
            ratio(node_init("ddp", 16, 16 * p), node_init("mpi", 16, 16 * p)))
    }
    target("1 node (-N1 -n2): ddp time now / baseline, worst of barrier, 8 B, 1 MiB allreduce",
        "<=", "1.10", regress("N1n2"))
    target("2 nodes (-N2 -n2): ddp time now / baseline, worst of barrier, 8 B, 1 MiB allreduce",
        "<=", "1.10", regress("N2n2"))
    print ""
}

# Every row of the tables above (a configuration's first run, as in
# where[]) that has ddp's time and a peer's, ddp's behind when its median
# is above the peer's: the counts, then those rows, in reading order.
# With --best-of, also each row's ratio of the medians over the rounds
# (rm, rg: the peer's run) and how many rows are behind by that.
function behind_section(   i, j, run, cfg, op, b, d, m, g, bm, bg, nm, ng, nl, line, w, x,
                           R, rm, rg, dm, mm, mg, bmm, bgm, nmm, ngm) {
    R = best_of > 1
    for (i = 1; i <= nruns; i++) {
        run = runs[i]
        if (run !~ /^ddp-/ || !(run in runcfg)) continue
        cfg = runcfg[run]
        for (j = 1; j <= nrows[run]; j++) {
            split(order[run, j], x, SUBSEP); op = x[1]; b = x[2]
            # The compute loop alone moves nothing: not a row to compare.
            if (op ~ /_sent$/ || op == "overlap_compute" || where["ddp" SUBSEP cfg, op, b] != run) continue
            d = t[run, op, b]
            if (d + 0 <= 0) continue
            rm = where["mpi" SUBSEP cfg, op, b]; rg = where["gloo" SUBSEP cfg, op, b]
            m = rm != "" ? t[rm, op, b] : ""
            g = rg != "" ? t[rg, op, b] : ""
            w = ""
            if (m + 0 > 0) { nm++; if (d + 0 > m + 0) { bm++; w = "MPI" } }
            if (G && g + 0 > 0) { ng++; if (d + 0 > g + 0) { bg++; w = w (w == "" ? "" : ", ") "gloo" } }
            if (R) {
                dm = round_median(run, op, b)
                mm = rm != "" ? ratio(dm, round_median(rm, op, b), "") : "n/a"
                mg = rg != "" ? ratio(dm, round_median(rg, op, b), "") : "n/a"
                if (mm != "n/a") { nmm++; if (mm + 0 > 1) bmm++ }
                if (G && mg != "n/a") { ngm++; if (mg + 0 > 1) bgm++ }
            }
            if (w == "") continue
            split(cfg, x, SUBSEP)
            line[++nl] = "| " x[1] " x " x[2] / x[1] " | " op " | " b " | " d " | " na(m) " | " ratio(d, m, "") \
                (G ? " | " na(g) " | " ratio(d, g, "") : "") \
                (R ? " | " mm (G ? " | " mg : "") : "") " | " w " |"
        }
    }
    print "## Rows behind a peer"
    print ""
    print "Every row above with ddp's time and a peer's; ddp is behind where its"
    print "median is above the peer's."
    print ""
    print "- Behind Open MPI: " bm + 0 " of " nm + 0 " rows."
    if (G) print "- Behind gloo: " bg + 0 " of " ng + 0 " rows."
    if (R) {
        print "- By the median over the " best_of " rounds (each row's best is above): behind Open MPI in " \
            bmm + 0 " of " nmm + 0 " rows" (G ? ", behind gloo in " bgm + 0 " of " ngm + 0 : "") "."
        print "  A row behind only in its best round is behind by the spread of the"
        print "  rounds, not by the median."
    }
    print ""
    if (nl == 0) return
    print "| nodes x ranks | op | bytes | ddp us | MPI us | ddp / MPI" \
        (G ? " | gloo us | ddp / gloo" : "") \
        (R ? " | ddp / MPI, median of rounds" (G ? " | ddp / gloo, median of rounds" : "") : "") " | behind |"
    print align(2, (G ? 6 : 4) + (R ? (G ? 2 : 1) : 0), 1)
    for (i = 1; i <= nl; i++) print line[i]
    print ""
}

function checks_section(   i) {
    print "## Result checks and failures"
    print ""
    print "- Rows with results checked and correct: " nok + 0 "; rows with wrong results: " nfail + 0 "."
    if (nretried > 0) {
        print "- Runs that failed and passed when tried again:"
        for (i = 1; i <= nretried; i++) print "  - " retried[i]
    }
    if (nfailed > 0) {
        print "- Failed runs:"
        for (i = 1; i <= nfailed; i++) print "  - " failed[i]
    } else
        print "- Failed runs: none."
}

# ---- the report ---------------------------------------------------------------

END {
    nnode = split(nodes, node_, ",")
    nppn = split(ppn, ppn_, ",")
    nsizes = split(sizes, size_, ",")
    nops = split(sweep_ops == "" ? "barrier,allreduce" : sweep_ops, op_, ",")
    ops_text = sweep_ops == "" || sweep_ops == "barrier,allreduce" ? "allreduce and barrier" : sweep_ops
    gsub(/,/, ", ", ops_text)
    sizes_text = sizes; gsub(/,/, ", ", sizes_text); sizes_text = sizes_text " bytes"
    have_baseline = baseline_read
    G = gloo + 0
    print "# libddp against Open MPI" (G ? " and gloo" : "") ": benchmark report"
    print ""
    print "- Date: " date " (" mode " mode, " (best_of > 1 ? "best of " best_of " rounds, " : "") secs " s)"
    print "- Programs: " programs
    print "- Machine: " machine
    print "- Cluster: " cluster
    print "- Load at start: `" load_start "`; at end: `" load_end "` (1, 5, 15 min)"
    if (rt_start != "")
        print "- A cache line's round trip between two CPUs (ddp-pingpong): " \
              rt_start (rt_start ~ /^[0-9]+$/ ? " ns" : "") " at start, " \
              rt_end (rt_end ~ /^[0-9]+$/ ? " ns" : "") " at end"
    print "- Times: per-call median over the iterations, slowest rank; ratio = ddp / MPI"
    print "  (time: lower is better; bandwidth: higher is better).  Raw data: `" rawdata "`."
    if (gloo_note != "") print "- gloo: " gloo_note (G ? "; ddp/gloo = ddp / gloo" : "")
    print "- Network: " (net == "" ? "none: every node on 127.0.0.1 (loopback: a 64 KiB MTU, memory-speed links)" : net)
    if (net != "")
        print "- Link rate, one TCP stream n1 -> n2 (ddp-test-cluster stream): " \
            (link_start == "" ? "not measured" : link_start " Gbit/s") " at start, " \
            (link_end == "" ? "not measured" : link_end " Gbit/s") " at end"
    print ""
    if (ran("collectives")) {
        print "## Collectives: one node, 2 ranks (-N1 -n2)"
        print ""
        collectives("N1n2")
        print ""
        print "## Collectives: two nodes, 1 rank each (-N2 -n2)"
        print ""
        collectives("N2n2")
        print ""
    }
    if (nodes != "") sweep_section()
    if (nodes != "" && link_gbs() != "") link_section()
    if (nodes != "" && swept_op("overlap")) overlap_section()
    if (nodes != "" && (swept_op("reduce_scatter") || swept_op("group_allreduce"))) comm_targets()
    if (ran("init")) init_section()
    if (ran("launch")) launch_section()
    if (ran("collectives")) { memory_section(); issue8_targets() }
    scale_targets()
    if (nodes != "" && link_gbs() != "") link_targets()
    behind_section()
    checks_section()
}

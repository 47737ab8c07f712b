# plot.gp - compare.sh's picture of the node sweep (gnuplot, PNG).
#
#   gnuplot -e "datafile='scale.dat'; outfile='scale.png'; ppn='1 4'; big='67108864'; gloo=1; link=0.025; allgather=1" plot.gp
#
# datafile (written by report.awk): a block per ranks-per-node value (ppn,
# blank-separated, in that order), a line per node count:
#   nodes ddp_bw_1MiB mpi_bw_1MiB ddp_bw_big mpi_bw_big ddp_us_8B mpi_us_8B
#   ddp_us_barrier mpi_us_barrier gloo_bw_1MiB gloo_bw_big gloo_us_8B
#   gloo_us_barrier ddp_agbw_big mpi_agbw_big gloo_agbw_big
# ("?" where a value is missing).  One row of two panels per ppn: allreduce
# bus bandwidth (1 MiB and the largest size, big bytes) and latency (8-byte
# allreduce and barrier) against the node count; libddp solid, Open MPI
# dashed, gloo dotted (gloo=1: gloo was run; default 0).  allgather=1: the
# allgather's bus bandwidth at the largest size too (green).  link: the
# link rate in GB/s (a networked cluster's measured rate; default 0: none),
# drawn as a black line: the bus bandwidth's limit with one rank per node.
set datafile missing "?"
if (!exists("gloo")) gloo = 0
if (!exists("link")) link = 0
if (!exists("allgather")) allgather = 0
haslink = (link + 0 > 0) ? 1 : 0
nppn = words(ppn)
set terminal pngcairo size 1200, 450 * nppn font "sans,10"
set output outfile
set multiplot layout nppn, 2
set logscale x 2
set xtics (1, 2, 4, 8, 16, 32, 64)
# Room beside the first and last node counts, so their points and tics show.
set offsets graph 0.04, graph 0.04, 0, 0
set xlabel "nodes"
set grid
set key top left
lastbig = (big + 0 == 1048576) ? 3 : 5
bigname = (big + 0 >= 1048576) ? sprintf("%d MiB", (big + 0) / 1048576) : sprintf("%d B", big + 0)
do for [i = 1:nppn] {
    p = word(ppn, i)
    per = (p eq "1") ? "1 rank per node" : p . " ranks per node"
    set title (allgather ? "allreduce and allgather" : "allreduce") . " bus bandwidth, " . per
    set ylabel "GB/s (busbw, log)"
    set logscale y
    set key bottom left
    # The largest size is drawn only when it is not 1 MiB itself.
    plot datafile index (i - 1) using 1:2 with linespoints lw 2 lc rgb "#1f77b4" pt 7 title "libddp 1 MiB", \
         ''       index (i - 1) using 1:3 with linespoints lw 2 lc rgb "#1f77b4" pt 6 dt 2 title "Open MPI 1 MiB", \
         for [j = 4:lastbig] '' index (i - 1) using 1:j with linespoints lw 2 \
             lc rgb "#d62728" pt 9 - j dt 1 + (j - 4) title (j == 4 ? "libddp " : "Open MPI ") . bigname, \
         for [j = 1:gloo] '' index (i - 1) using 1:10 with linespoints lw 2 lc rgb "#1f77b4" pt 2 dt 3 title "gloo 1 MiB", \
         for [j = 1:(lastbig == 5 ? gloo : 0)] '' index (i - 1) using 1:11 with linespoints lw 2 \
             lc rgb "#d62728" pt 2 dt 3 title "gloo " . bigname, \
         for [j = 14:(allgather ? 15 : 13)] '' index (i - 1) using 1:j with linespoints lw 2 \
             lc rgb "#2ca02c" pt 9 - (j - 10) dt 1 + (j - 14) title (j == 14 ? "libddp " : "Open MPI ") . "allgather " . bigname, \
         for [j = 1:(allgather ? gloo : 0)] '' index (i - 1) using 1:16 with linespoints lw 2 \
             lc rgb "#2ca02c" pt 2 dt 3 title "gloo allgather " . bigname, \
         for [j = 1:haslink] link with lines lw 2 lc rgb "black" \
             title sprintf("link %.3g Gbit/s", link * 8)
    set title "latency, " . per
    set key top left
    set ylabel "us per call (log)"
    plot datafile index (i - 1) using 1:6 with linespoints lw 2 lc rgb "#2ca02c" pt 7 title "libddp allreduce 8 B", \
         ''       index (i - 1) using 1:7 with linespoints lw 2 lc rgb "#2ca02c" pt 6 dt 2 title "Open MPI allreduce 8 B", \
         ''       index (i - 1) using 1:8 with linespoints lw 2 lc rgb "#9467bd" pt 5 title "libddp barrier", \
         ''       index (i - 1) using 1:9 with linespoints lw 2 lc rgb "#9467bd" pt 4 dt 2 title "Open MPI barrier", \
         for [j = 1:gloo] '' index (i - 1) using 1:12 with linespoints lw 2 lc rgb "#2ca02c" pt 2 dt 3 title "gloo allreduce 8 B", \
         for [j = 1:gloo] '' index (i - 1) using 1:13 with linespoints lw 2 lc rgb "#9467bd" pt 2 dt 3 title "gloo barrier"
}
unset multiplot

# torch-step.gp - doc/benchmarks-torch-step.png from torch-step.py's TSVs:
# each model's step on backend ddp and on gloo, and its compute alone,
# unshaped and at 200 Mbit/s.
#   gnuplot -e "net='net.tsv'; slow='200mbit.tsv'; out='x.png'" torch-step.gp
# Columns used: model (1), impl (10), step_ms (11), compute_ms (13).
set terminal pngcairo size 900,480 font ",10"
set output out
set datafile separator "\t"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "ms a step (slowest rank's median)"
set logscale y
set yrange [50:20000]
set grid ytics
set key top left
set title "DDP training step, 2 nodes x 2 ranks, torch 1.13: backend ddp against gloo"
# One row per (network, model): compute, ddp step, gloo step.
cmd = sprintf("awk -F'\\t' 'FNR > 1 { c[FILENAME, $1] = $13; s[FILENAME, $1, $10] = $11 } END { split(\"%s %s\", f, \" \"); split(\"unshaped 200Mbit/s\", n, \" \"); for (i = 1; i <= 2; i++) for (m = 1; m <= 2; m++) { mo = m == 1 ? \"large\" : \"small\"; printf \"%%s %%s\\t%%s\\t%%s\\t%%s\\n\", mo, n[i], c[f[i], mo], s[f[i], mo, \"ddp\"], s[f[i], mo, \"gloo\"] } }' %s %s", net, slow, net, slow)
plot "< ".cmd using 2:xtic(1) title "compute alone", \
     "" using 3 title "ddp", \
     "" using 4 title "gloo"

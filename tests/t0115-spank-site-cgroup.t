#!/bin/sh
test_description='srun --ddp on a cluster configured as GPU sites run Slurm: task/affinity and task/cgroup, proctrack/cgroup, ConstrainCores, ConstrainDevices, ConstrainRAMSpace, cons_tres'
. "$(dirname "$0")/test-lib.sh"
# One private cluster for the file (ddp-test-cluster start --site-cgroup):
# what it could not constrain on this machine is in its DIR/site, with
# Slurm's words, and only the checks of that part are skipped.
ddp_cluster_private --nodes 2 --site-cgroup

# Each part of the configuration that runs here is a prerequisite.
for part in devices cores ram affinity; do
	if grep -qx "$part=yes" "$DDP_CLUSTER_DIR/site"; then
		test_set_prereq "$(echo $part | tr a-z A-Z)"
	else
		say "# not covered here: $(grep "^$part=" "$DDP_CLUSTER_DIR/site")"
	fi
done
# Device checks: read by the awk checker (1: the device cgroup confines
# each task, and Slurm numbers its GPUs from 0 there).
devices=0
test_have_prereq DEVICES && devices=1
cgv=1
test "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs && cgv=2

# taskview: one line per task: the rank variables and Slurm's, the GPU
# variables, then what the task's cgroups let it do: OPEN, the fake GPUs
# (DDP_CLUSTER_DIR/dev/nvidiaN, character devices 195:N without a driver)
# it can open() up to the missing driver (ENXIO), DENIED those the device
# cgroup refuses (EPERM), ODD any other answer; CPUS its affinity, STEPCPUS
# its cpuset cgroup's CPUs, MEM its memory cgroup's limit (the lowest on
# the way up).
cat >taskview <<EOF
#!/bin/sh
LC_ALL=C; export LC_ALL
line=\$("$DDP_PROGS/rankview" SLURMD_NODENAME RANK LOCAL_RANK WORLD_SIZE \\
	NODE_RANK SLURM_PROCID SLURM_LOCALID SLURM_NTASKS SLURM_NODEID \\
	SLURM_JOB_ID SLURM_STEP_ID MASTER_ADDR MASTER_PORT DDP_BACKEND \\
	CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS DDP_DEVICE SLURM_CPUS_PER_TASK OMP_NUM_THREADS \\
	DDP_SOCKET_IFNAME NCCL_SOCKET_IFNAME)
ok= no= odd=
for f in "$DDP_CLUSTER_DIR"/dev/nvidia[0-9]*; do
	i=\${f##*nvidia}
	e=\$( (: <"\$f") 2>&1 )
	case \$e in
	*"Operation not permitted"*) no=\$no\${no:+,}\$i ;;
	*"No such device or address"*) ok=\$ok\${ok:+,}\$i ;;
	*) odd=\$odd\${odd:+,}\$i ;;
	esac
done
cpus=\$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
if test $cgv = 1; then
	cs=/sys/fs/cgroup/cpuset\$(sed -n 's/^[0-9]*:cpuset:\(.*\)/\1/p' /proc/self/cgroup)
	stepcpus=\$(cat "\$cs/cpuset.effective_cpus" 2>/dev/null || cat "\$cs/cpuset.cpus")
	m=/sys/fs/cgroup/memory\$(sed -n 's/^[0-9]*:memory:\(.*\)/\1/p' /proc/self/cgroup)
	mem=
	while test "\$m" != /sys/fs/cgroup/memory; do
		l=\$(cat "\$m/memory.limit_in_bytes" 2>/dev/null) &&
		{ test -z "\$mem" || test "\$l" -lt "\$mem"; } && mem=\$l
		m=\${m%/*}
	done
else
	c=/sys/fs/cgroup\$(sed -n 's/^0::\(.*\)/\1/p' /proc/self/cgroup)
	stepcpus=\$(cat "\$c/cpuset.cpus.effective" 2>/dev/null)
	mem=
	while test "\$c" != /sys/fs/cgroup; do
		l=\$(cat "\$c/memory.max" 2>/dev/null) && test "\$l" != max &&
		{ test -z "\$mem" || test "\$l" -lt "\$mem"; } && mem=\$l
		c=\${c%/*}
	done
fi
echo "VIEW \$line OPEN=\${ok:--} DENIED=\${no:--} ODD=\${odd:--} CPUS=\$cpus STEPCPUS=\${stepcpus:--} MEM=\${mem:--}"
EOF
chmod +x taskview

# runtask [ME OTHER]: what each task of a step runs: taskview, then an
# all-reduce of libddp's host backend (ddp_check -q; the fake GPUs cannot
# run NCCL), whatever backend the plugin chose.  With ME and OTHER, for
# steps meant to run at once: rank 0 first says ME is up (ME.up), and
# every task waits (20 s at most) for OTHER.up, so that both overlap; a
# task that waited in vain fails.
cat >runtask <<EOF
#!/bin/sh
if test \$# = 2; then
	test "\$SLURM_PROCID" = 0 && touch "$PWD/\$1.up"
	i=0
	while test ! -e "$PWD/\$2.up" && test \$i -lt 200; do
		sleep 0.1; i=\$((i + 1))
	done
	test -e "$PWD/\$2.up" || { echo "\$1 never met \$2" >&2; exit 1; }
fi
"$PWD/taskview"
DDP_BACKEND=host exec "$DDP_PROGS/ddp_check" -q
EOF
chmod +x runtask

# step NAME SRUN-ARGS...: srun SRUN-ARGS runtask, its lines in NAME.
step () {
	name=$1
	shift
	ddp_srun "$@" "$PWD/runtask" >"$name" 2>"$name.err"
	rc=$?
	ddp_show "$name" "$name.err"
	return $rc
}

# check FILE NTASKS BACKEND SHARE: FILE holds one step's NTASKS tasks
# (VIEW lines, a step's only unless FILE holds several steps: then each
# is checked on its own), each with:
# - RANK, LOCAL_RANK, WORLD_SIZE, NODE_RANK Slurm's own ids, ranks 0 to
#   NTASKS-1 once each;
# - one MASTER_PORT in the plugin's port_range (29500-29999 by default);
# - DDP_BACKEND BACKEND;
# - SHARE: the GPUs each task holds: "-" none (no CUDA_VISIBLE_DEVICES);
#   "1" one bound GPU, no two tasks of a node on the same; "2" its own two
#   (DDP_DEVICE=0); "all:K" K GPUs of the step seen by the whole node, one
#   bound per task, distinct on the node;
# - with ConstrainDevices (devices=1): the task opens exactly its share
#   (K GPUs for all:K) and is refused the other fake GPUs (EPERM), its
#   CUDA_VISIBLE_DEVICES counts among those it can open (Slurm numbers
#   them from 0 there: entry I is the I-th it can open), and no two tasks
#   of a node end on the same GPU;
# - its CPUs within its step's cpuset (the plugin never widens them),
#   OMP_NUM_THREADS no more than SLURM_CPUS_PER_TASK, nor than its CPUs
#   when it is bound to fewer than the machine has;
# - with ConstrainRAMSpace, a memory limit below the node's 4000 MB;
# and NTASKS "0 failed in all" lines from ddp_check.
check () {
	awk -v n="$2" -v b="$3" -v share="$4" -v dev="$devices" \
	    -v ram="$(test_have_prereq RAM && echo 1)" \
	    -v online="$(getconf _NPROCESSORS_ONLN)" '
	function ids(s, a,   m, i) { m = split(s, a, ","); return s == "-" ? 0 : m }
	function inlist(cpu, list,   r, i, lo, hi, k) {
		k = split(list, r, ",")
		for (i = 1; i <= k; i++) {
			lo = r[i]; hi = r[i]
			if (index(r[i], "-")) { split(r[i], x, "-"); lo = x[1]; hi = x[2] }
			if (cpu + 0 >= lo + 0 && cpu + 0 <= hi + 0) return 1
		}
		return 0
	}
	function bad(what) { print "check: " what ": " $0; errors++ }
	/0 failed in all$/ { allreduce++ }
	/^VIEW / {
		delete v
		for (i = 2; i <= NF; i++) {
			eq = index($i, "="); v[substr($i, 1, eq - 1)] = substr($i, eq + 1)
		}
		step = v["SLURM_JOB_ID"] "." v["SLURM_STEP_ID"]; steps[step]++
		node = step SUBSEP v["SLURMD_NODENAME"]
		if (v["RANK"] != v["SLURM_PROCID"]) bad("RANK")
		if (v["LOCAL_RANK"] != v["SLURM_LOCALID"]) bad("LOCAL_RANK")
		if (v["WORLD_SIZE"] != v["SLURM_NTASKS"] || v["WORLD_SIZE"] + 0 != n + 0) bad("WORLD_SIZE")
		if (v["NODE_RANK"] != v["SLURM_NODEID"]) bad("NODE_RANK")
		if (rank[step, v["RANK"]]++) bad("RANK twice")
		if (v["RANK"] !~ /^[0-9]+$/ || v["RANK"] + 0 >= n + 0) bad("RANK range")
		p = v["MASTER_PORT"]; pn = p + 0
		if (p !~ /^[0-9]+$/ || pn < 29500 || pn > 29999) bad("MASTER_PORT range")
		if ((step in port) && port[step] != p) bad("MASTER_PORT differs in the step")
		port[step] = p; addr[step] = v["MASTER_ADDR"]
		if (v["DDP_BACKEND"] != b) bad("DDP_BACKEND")
		g = v["CUDA_VISIBLE_DEVICES"]; ng = ids(g, gl); no = ids(v["OPEN"], ol)
		if (v["ODD"] != "-") bad("a fake GPU neither opened nor refused")
		if (share == "-") {
			if (g != "-") bad("GPUs in a step without")
			if (dev && no != 0) bad("a GPU open to a step without")
		} else if (share == "1" || share ~ /^all:/) {
			if (ng != 1) bad("not one GPU bound")
			k = share == "1" ? 1 : substr(share, 5) + 0
			if (dev && no != k) bad("opens " no " GPUs, not " k)
			if (dev && gl[1] + 1 > no) bad("CUDA_VISIBLE_DEVICES past what it can open")
			real = dev ? ol[gl[1] + 1] : g
			if (used[node, real]++) bad("GPU " real " shared on the node")
		} else if (share == "2") {
			if (ng != 2) bad("not a share of two")
			if (v["DDP_DEVICE"] != "0") bad("DDP_DEVICE")
			if (dev && no != 2) bad("opens " no " GPUs, not 2")
			for (j = 1; j <= ng; j++) {
				if (dev && gl[j] + 1 > no) bad("CUDA_VISIBLE_DEVICES past what it can open")
				real = dev ? ol[gl[j] + 1] : gl[j]
				if (used[node, real]++) bad("GPU " real " shared on the node")
			}
		}
		if (dev && ids(v["DENIED"], dl) + no != 4) bad("OPEN and DENIED are not the 4 GPUs")
		k = split(v["CPUS"], cl, ","); ncpu = 0
		for (j = 1; j <= k; j++) {
			split(cl[j], x, "-"); ncpu += x[2] == "" ? 1 : x[2] - x[1] + 1
		}
		if (ncpu < online + 0 && v["OMP_NUM_THREADS"] + 0 > ncpu)
			bad("OMP_NUM_THREADS above the " ncpu " CPUs it is bound to")
		if (v["STEPCPUS"] != "-") {
			for (j = 1; j <= k; j++) {
				split(cl[j], x, "-")
				if (!inlist(x[1], v["STEPCPUS"]) || (x[2] != "" && !inlist(x[2], v["STEPCPUS"])))
					bad("CPUs outside the step")
			}
		}
		if (v["SLURM_CPUS_PER_TASK"] ~ /^[0-9]+$/ && v["OMP_NUM_THREADS"] + 0 > v["SLURM_CPUS_PER_TASK"] + 0)
			bad("OMP_NUM_THREADS above SLURM_CPUS_PER_TASK")
		if (ram && (v["MEM"] !~ /^[0-9]+$/ || v["MEM"] + 0 >= 4000 * 1048576)) bad("no memory limit")
		tasks++
	}
	END {
		for (s in steps) {
			nsteps++
			if (steps[s] != n) { print "check: step " s " has " steps[s] " tasks, not " n; errors++ }
			for (t in steps) if (t != s && port[t] == port[s] && addr[t] == addr[s]) {
				print "check: steps " s " and " t " share MASTER_PORT " port[s]; errors++
			}
		}
		if (!nsteps) { print "check: no task"; errors++ }
		if (allreduce != tasks) { print "check: " allreduce " all-reduces for " tasks " tasks"; errors++ }
		exit errors ? 1 : 0
	}' "$1"
}

test_expect_success 'the configuration is what sites run' '
	grep -x "TaskPlugin=task/affinity,task/cgroup" "$DDP_CLUSTER_DIR/etc/slurm.conf" ||
		grep -x "affinity=no .*" "$DDP_CLUSTER_DIR/site" &&
	grep -x "ProctrackType=proctrack/cgroup" "$DDP_CLUSTER_DIR/etc/slurm.conf" &&
	grep -x "SelectType=select/cons_tres" "$DDP_CLUSTER_DIR/etc/slurm.conf" &&
	grep "^NodeName=.* File=$DDP_CLUSTER_DIR/dev/nvidia\[0-3\]" "$DDP_CLUSTER_DIR/etc/gres.conf" &&
	cat "$DDP_CLUSTER_DIR/etc/cgroup.conf" "$DDP_CLUSTER_DIR/site" | ddp_show
'

test_expect_success '--gpus-per-task=1: ranks, one GPU each, an all-reduce' '
	step g1 --ddp=nccl -N2 --ntasks-per-node=2 --gpus-per-task=1 &&
	check g1 4 nccl 1
'
test_expect_success 'the checker catches a wrong rank and a shared GPU' '
	sed "1s/ RANK=\([0-9]\) / RANK=9 /" g1 >g1.rank &&
	! cmp -s g1 g1.rank && test_must_fail check g1.rank 4 nccl 1 &&
	sed "/^VIEW SLURMD_NODENAME=n1 /s/ OPEN=[0-9] / OPEN=0 /" g1 >g1.shared &&
	sed "/^VIEW SLURMD_NODENAME=n1 /s/ CUDA_VISIBLE_DEVICES=[0-9] / CUDA_VISIBLE_DEVICES=0 /" \
		g1.shared >g1.shared2 &&
	test_must_fail check g1.shared2 4 nccl 1
'
test_expect_success DEVICES 'ConstrainDevices: a task opens its GPU, the other three are refused (EPERM)' '
	test $(grep -c " OPEN=[0-3] DENIED=[0-3],[0-3],[0-3] ODD=- " g1) = 4
'
test_expect_success DEVICES 'the checker catches a GPU outside the device cgroup' '
	sed "1s/CUDA_VISIBLE_DEVICES=0 /CUDA_VISIBLE_DEVICES=1 /" g1 >g1.wide &&
	! cmp -s g1 g1.wide && test_must_fail check g1.wide 4 nccl 1 &&
	sed "/^VIEW /s/ OPEN=\([0-9]\) DENIED=[0-9],/ OPEN=\1 DENIED=/" g1 >g1.open &&
	! cmp -s g1 g1.open && test_must_fail check g1.open 4 nccl 1
'
test_expect_success CORES 'ConstrainCores: a step of one CPU has a cpuset of one CPU' '
	step c1 --ddp=host -N1 -n1 &&
	check c1 1 host - &&
	grep " STEPCPUS=[0-9]* MEM=" c1
'
test_expect_success RAM 'ConstrainRAMSpace: a step of one CPU is limited to DefMemPerCPU, 200 MB' '
	grep " MEM=$((200 * 1048576))\$" c1 || {
		step c1 --ddp=host -N1 -n1 &&
		grep " MEM=$((200 * 1048576))\$" c1
	}
'
test_expect_success '--gpus-per-task=2: a task keeps both, DDP_DEVICE=0' '
	step g2 --ddp=nccl -N2 --ntasks-per-node=2 --gpus-per-task=2 &&
	check g2 4 nccl 2
'
test_expect_success '--gpus-per-task=2 with --ddp=host: the same' '
	step g2h --ddp=host -N1 -n2 --gpus-per-task=2 &&
	check g2h 2 host 2
'
test_expect_success '--gpus-per-node=4, 2 tasks a node: one of the node'"'"'s GPUs each' '
	step gpn --ddp=nccl -N2 --ntasks-per-node=2 --gpus-per-node=4 &&
	check gpn 4 nccl all:4
'
test_expect_success '--gpu-bind=closest' '
	step closest --ddp=nccl -N2 --ntasks-per-node=2 --gres=gpu:2 --gpu-bind=closest &&
	check closest 4 nccl all:2
'
test_expect_success '--gpu-bind=map_gpu:3,1: each task keeps the GPU Slurm mapped' '
	step map --ddp=nccl -N1 -n2 --gres=gpu:4 --gpu-bind=map_gpu:3,1 &&
	check map 2 nccl 1 &&
	if test $devices = 1; then
		grep -q "LOCAL_RANK=0 .* OPEN=3 " map &&
		grep -q "LOCAL_RANK=1 .* OPEN=1 " map
	fi
'
test_expect_success '--gpu-bind=single:1' '
	step single --ddp=host -N2 --ntasks-per-node=2 --gres=gpu:2 --gpu-bind=single:1 &&
	check single 4 host 1
'
test_expect_success '--gpu-bind=none: one GPU each from the step'"'"'s' '
	step none --ddp=nccl -N2 --ntasks-per-node=2 --gres=gpu:2 --gpu-bind=none &&
	check none 4 nccl all:2
'
test_expect_success '--gpu-bind=none, two GPUs held by another job: bound inside the step'"'"'s two' '
	rm -f holder.started holder.job &&
	( ddp_srun -N1 -w n1 --gres=gpu:2 sh -c \
		"echo \$SLURM_JOB_ID >holder.job;
		 echo \$SLURM_STEP_GPUS >holder.started; sleep 30" & ) &&
	i=0 && while test ! -s holder.started && test $i -lt 300; do
		sleep 0.1; i=$((i + 1)); done &&
	held=$(cat holder.started) && test -n "$held" &&
	step held --ddp=nccl -N1 -w n1 -n2 --gres=gpu:2 --gpu-bind=none;
	rc=$? &&
	scancel --quiet "$(cat holder.job)";
	echo "holder has $held" &&
	test $rc = 0 && check held 2 nccl all:2 &&
	if test $devices = 1; then
		free=$(echo 0 1 2 3 $(echo $held | tr , " ") | tr " " "\n" |
			sort | uniq -u | paste -sd, -) &&
		echo "free: $free" &&
		test $(grep -c " OPEN=$free DENIED=$held " held) = 2
	fi
'
test_expect_success '--cpus-per-task=2 --cpu-bind=cores: CPUs inside the step'"'"'s, OMP_NUM_THREADS' '
	step cores --ddp=host -N2 --ntasks-per-node=2 --cpus-per-task=2 --cpu-bind=cores &&
	check cores 4 host - &&
	test $(grep -c "SLURM_CPUS_PER_TASK=2 OMP_NUM_THREADS=[12] " cores) = 4
'
test_expect_success AFFINITY '--cpus-per-task=2 --cpu-bind=map_cpu:1: one CPU, OMP_NUM_THREADS=1' '
	step mapcpu --ddp=host -N1 -n1 --cpus-per-task=2 --cpu-bind=map_cpu:1 &&
	check mapcpu 1 host - &&
	grep " SLURM_CPUS_PER_TASK=2 OMP_NUM_THREADS=1 .* CPUS=1 " mapcpu
'
test_expect_success 'the checker catches OMP_NUM_THREADS above a binding' '
	sed "s/ OMP_NUM_THREADS=1 / OMP_NUM_THREADS=2 /" mapcpu >mapcpu.wide &&
	! cmp -s mapcpu mapcpu.wide &&
	test_must_fail check mapcpu.wide 1 host -
'
test_expect_success '--exclusive with --gpus-per-task=1' '
	step excl --ddp=nccl -N2 --ntasks-per-node=2 --exclusive --gpus-per-task=1 &&
	check excl 4 nccl 1
'

# A step takes all of the job's memory on its nodes unless it asks for
# less (Slurm: "Requested nodes are busy" for the second): --mem-per-cpu.
test_expect_success 'sbatch, two steps at once: distinct MASTER_PORT, each step right' '
	rm -f a.up b.up &&
	cat >job.sh <<-EOF &&
	#!/bin/sh
	srun -N2 -n2 --gpus-per-node=1 --exact --mem-per-cpu=200 "$PWD/runtask" a b >steps.a 2>&1 & a=\$!
	srun -N2 -n2 --gpus-per-node=1 --exact --mem-per-cpu=200 "$PWD/runtask" b a >steps.b 2>&1 & b=\$!
	wait \$a && wait \$b
	EOF
	timeout 90 sbatch --wait --ddp=nccl -N2 --ntasks-per-node=2 --gpus-per-node=2 \
		-o job.out job.sh &&
	cat steps.a steps.b >steps && ddp_show steps job.out &&
	test -e a.up && test -e b.up &&
	check steps.a 2 nccl 1 && check steps.b 2 nccl 1 &&
	check steps 2 nccl 1 &&
	test $(sed -n "s/.*MASTER_PORT=\([0-9]*\).*/\1/p" steps | sort -u | wc -l) = 2
'
test_expect_success 'the checker catches two steps on one port' '
	p=$(sed -n "1s/.*MASTER_PORT=\([0-9]*\).*/\1/p" steps.a) &&
	sed "s/MASTER_PORT=[0-9]*/MASTER_PORT=$p/" steps >steps.same &&
	test_must_fail check steps.same 2 nccl 1
'
test_expect_success 'salloc: srun inside the allocation' '
	timeout 90 salloc --ddp=host -N2 --ntasks-per-node=2 --gpus-per-task=1 \
		srun "$PWD/runtask" >salloc.out 2>salloc.err &&
	ddp_show salloc.out salloc.err &&
	check salloc.out 4 host 1
'
test_expect_success 'a job array, both on n1 at once: each right, distinct ports' '
	rm -f arr.0.up arr.1.up &&
	cat >array.sh <<-EOF &&
	#!/bin/sh
	srun "$PWD/runtask" arr.\$SLURM_ARRAY_TASK_ID arr.\$((1 - SLURM_ARRAY_TASK_ID))
	EOF
	timeout 90 sbatch --wait --array=0-1 --ddp=nccl -w n1 -N1 -n2 \
		--gpus-per-task=1 -o "array.%a.out" array.sh &&
	ddp_show array.0.out array.1.out &&
	test -e arr.0.up && test -e arr.1.up &&
	check array.0.out 2 nccl 1 && check array.1.out 2 nccl 1 &&
	cat array.0.out array.1.out >array.out &&
	check array.out 2 nccl 1
'

# The site's socket_ifname (plugstack.conf) reaches the tasks of this
# configuration, and libddp's all-reduce runs on that interface: lo for
# nodes on 127.0.0.1, eth0 for nodes on a network (start --net).
ifname=lo
test "${DDP_CLUSTER_NET:-0}" = 1 && ifname=eth0
test_expect_success "plugstack socket_ifname=$ifname: DDP_SOCKET_IFNAME and NCCL_SOCKET_IFNAME in every task" '
	"$DDP_CLUSTER" plugstack "$DDP_CLUSTER_DIR" socket_ifname=$ifname &&
	step ifname --ddp=nccl -N2 --ntasks-per-node=2 --gpus-per-task=1;
	rc=$? &&
	"$DDP_CLUSTER" plugstack "$DDP_CLUSTER_DIR" &&
	test $rc = 0 &&
	check ifname 4 nccl 1 &&
	test $(grep -c " DDP_SOCKET_IFNAME=$ifname NCCL_SOCKET_IFNAME=$ifname " ifname) = 4 &&
	step noifname --ddp=host -N1 -n1 &&
	grep " DDP_SOCKET_IFNAME=- NCCL_SOCKET_IFNAME=- " noifname
'
test_done

#!/bin/sh
test_description='ddp-run, the local launcher as a user tool: what srun --ddp
gives each task, one GPU per rank from a fake GPU list, the refusals, a
failed rank ending the job and named, signals passed on, bad command lines'
. "$(dirname "$0")/test-lib.sh"

# No cluster, no root: fake machines are directory trees that ddp-run reads
# instead of / (DDP_RUN_SYSROOT): /proc/driver/nvidia and /dev for the
# GPUs and the driver, /proc/net/tcp for the ports.

RUN=$DDP_BUILD_DIR/contrib/ddp-run/ddp-run
VIEW=$DDP_PROGS/rankview
CHECK=$DDP_PROGS/ddp_check
FAULT=$DDP_PROGS/ddp_fault
# Not in a Slurm step or a PMIx job, whatever the caller is in.
unset PMIX_NAMESPACE SLURM_STEP_NUM_TASKS WORLD_SIZE RANK DDP_BOOTSTRAP
unset DDP_TIMEOUT DDP_INIT_TIMEOUT DDP_DEBUG DDP_BACKEND CUDA_VISIBLE_DEVICES
unset MASTER_ADDR MASTER_PORT NNODES

# The variables every rank shows (rankview prints NAME=VALUE, "-" if unset).
VARS="RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK NNODES MASTER_ADDR DDP_BACKEND DDP_RESTART_COUNT CUDA_VISIBLE_DEVICES"

# run NAME [VAR=VALUE...] ARGS...: ddp-run ARGS with the variables set,
# bounded, its exit status in NAME.rc and the seconds it took in
# NAME.secs, output in NAME.out (sorted: the ranks print in any order) and
# NAME.err.
run () {
	name=$1; shift
	(
	while case $1 in *=*) true ;; *) false ;; esac; do
		export "$1"; shift
	done
	start=$(date +%s.%N)
	timeout --kill-after=5 120 "$RUN" "$@" >"$name.raw" 2>"$name.err"
	echo $? >"$name.rc"
	echo "$start $(date +%s.%N)" | awk '{ printf "%.1f\n", $2 - $1 }' >"$name.secs"
	)
	sort "$name.raw" >"$name.out"
	cat "$name.out"; cat "$name.err" >&2
	echo "exit $(cat "$name.rc") after $(cat "$name.secs") s"
}

# within NAME SECONDS: the run took less.
within () {
	awk -v t="$(cat "$1.secs")" -v b="$2" 'BEGIN { exit !(t < b) }'
}

test_expect_success 'fake machines: none, 4 GPUs in /proc, 2 in /dev only' '
	mkdir -p none four/proc/driver/nvidia/gpus dev2/dev &&
	for b in 0000:1a:00.0 0000:3b:00.0 0000:5e:00.0 0000:88:00.0; do
		mkdir "four/proc/driver/nvidia/gpus/$b" || return 1
	done &&
	echo "NVRM version: fake" >four/proc/driver/nvidia/version &&
	touch dev2/dev/nvidia0 dev2/dev/nvidia1 dev2/dev/nvidiactl \
		dev2/dev/nvidia-uvm
'
DDP_RUN_SYSROOT=$PWD/none
export DDP_RUN_SYSROOT

test_expect_success 'the environment of each rank: 5 ranks over 2 simulated nodes' '
	run env -n 5 -N 2 -- "$VIEW" $VARS &&
	test "$(cat env.rc)" = 0 &&
	for r in 0 1 2 3 4; do
		if test $r -lt 3; then node=0 l=$r lsize=3; else node=1 l=$((r - 3)) lsize=2; fi
		echo "RANK=$r WORLD_SIZE=5 LOCAL_RANK=$l LOCAL_WORLD_SIZE=$lsize NODE_RANK=$node NNODES=2 MASTER_ADDR=127.0.0.1 DDP_BACKEND=host DDP_RESTART_COUNT=0 CUDA_VISIBLE_DEVICES=-"
	done >expect &&
	test_cmp expect env.out
'

test_expect_success 'MASTER_PORT: one free port for every rank, or the one asked for' '
	run port -n 3 -- "$VIEW" MASTER_PORT &&
	sort -u port.out >ports &&
	test $(wc -l <ports) = 1 &&
	p=$(sed "s/MASTER_PORT=//" ports) &&
	test "$p" -ge 29500 && test "$p" -le 29999 &&
	run asked -n 2 --master-port 29123 -- "$VIEW" MASTER_PORT &&
	printf "MASTER_PORT=29123\nMASTER_PORT=29123\n" >expect &&
	test_cmp expect asked.out
'

# /proc/net/tcp of a machine where something listens on every port of
# 29500-29999 but FREE (or on all of them when FREE is empty).
tcp_table () {
	echo "  sl  local_address rem_address   st tx_queue rx_queue"
	awk -v free="$1" "BEGIN { for (p = 29500; p <= 29999; p++) if (p != free)
		printf \"%4d: 00000000:%04X 00000000:0000 0A 00000000:00000000\\n\", p - 29500, p }"
}

test_expect_success 'MASTER_PORT skips ports taken on the machine; none free: refused' '
	mkdir -p busy/proc/net full/proc/net &&
	tcp_table 29777 >busy/proc/net/tcp &&
	tcp_table "" >full/proc/net/tcp &&
	test $(grep -c " 0A " full/proc/net/tcp) = 500 &&
	run busy DDP_RUN_SYSROOT="$PWD/busy" -n 2 -- "$VIEW" MASTER_PORT &&
	printf "MASTER_PORT=29777\nMASTER_PORT=29777\n" >expect &&
	test_cmp expect busy.out &&
	run full DDP_RUN_SYSROOT="$PWD/full" -n 2 -- touch ran &&
	test "$(cat full.rc)" = 2 &&
	grep -q "^ddp-run: no port for MASTER_PORT in 29500-29999: Address already in use; give one with --master-port$" full.err &&
	! test -e ran
'

test_expect_success 'a port something listens on is refused; rank 0 listens on MASTER_PORT' '
	"$RUN" -n 1 -- "$DDP_PROGS/port_holder" 30 >hold.out 2>hold.err &
	pid=$!
	for i in $(seq 50); do grep -q "^listening on" hold.out && break; sleep 0.1; done
	p=$(sed -n "s/^listening on \([0-9]*\)$/\1/p" hold.out)
	run taken DDP_RUN_SYSROOT= -n 1 --master-port "${p:-1}" -- touch ran
	kill -TERM $pid; wait $pid
	test -n "$p" &&
	test "$(cat taken.rc)" = 2 &&
	grep -q "^ddp-run: MASTER_PORT $p is already in use on this machine: another job or program listens there; give another --master-port, or leave it out to get a free one$" taken.err &&
	! test -e ran
'

test_expect_success 'a libddp job on the host backend over 2 simulated nodes' '
	run check -n 4 -N 2 -- "$CHECK" -q -l 0 &&
	test "$(cat check.rc)" = 0 &&
	test $(grep -c "0 failed in all" check.out) = 4 &&
	grep -q "^ddp_check rank 3/4 local 1/2 node 1/2 backend host:" check.out
'

test_expect_success 'one GPU per rank from the driver'"'"'s list; -n defaults to one rank per GPU' '
	run four DDP_RUN_SYSROOT="$PWD/four" -v -- "$VIEW" RANK DDP_BACKEND CUDA_VISIBLE_DEVICES &&
	test "$(cat four.rc)" = 0 &&
	for r in 0 1 2 3; do
		echo "RANK=$r DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=$r"
	done >expect &&
	test_cmp expect four.out &&
	grep -q "^ddp-run: 4 ranks on 1 node, backend nccl (auto: a GPU per rank (4 ranks on a node, 4 GPUs) and an NVIDIA driver); 4 GPUs ($PWD/four/proc/driver/nvidia/gpus), 4 ranks bound to one; MASTER_ADDR=127.0.0.1 MASTER_PORT=[0-9]*$" four.err &&
	run dev2 DDP_RUN_SYSROOT="$PWD/dev2" -- "$VIEW" RANK CUDA_VISIBLE_DEVICES &&
	printf "RANK=0 CUDA_VISIBLE_DEVICES=0\nRANK=1 CUDA_VISIBLE_DEVICES=1\n" >expect &&
	test_cmp expect dev2.out
'

test_expect_success 'CUDA_VISIBLE_DEVICES is the GPU list when set; each simulated node binds its own' '
	run uuids CUDA_VISIBLE_DEVICES=GPU-aa,GPU-bb DDP_BACKEND=nccl -n 4 -N 2 -- "$VIEW" RANK NODE_RANK DDP_BACKEND CUDA_VISIBLE_DEVICES &&
	test "$(cat uuids.rc)" = 0 &&
	cat >expect <<-\EOF &&
	RANK=0 NODE_RANK=0 DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=GPU-aa
	RANK=1 NODE_RANK=0 DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=GPU-bb
	RANK=2 NODE_RANK=1 DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=GPU-aa
	RANK=3 NODE_RANK=1 DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=GPU-bb
	EOF
	test_cmp expect uuids.out
'

test_expect_success 'auto with more ranks than GPUs is host, unbound; host binds; --nobind' '
	run many DDP_RUN_SYSROOT="$PWD/four" -v -n 6 -- "$VIEW" DDP_BACKEND CUDA_VISIBLE_DEVICES &&
	test "$(cat many.rc)" = 0 &&
	test "$(sort -u many.out)" = "DDP_BACKEND=host CUDA_VISIBLE_DEVICES=-" &&
	grep -q "backend host (auto: 6 ranks on a node and 4 GPUs)" many.err &&
	run host DDP_RUN_SYSROOT="$PWD/four" -n 2 -b host -- "$VIEW" DDP_BACKEND CUDA_VISIBLE_DEVICES &&
	printf "DDP_BACKEND=host CUDA_VISIBLE_DEVICES=0\nDDP_BACKEND=host CUDA_VISIBLE_DEVICES=1\n" >expect &&
	test_cmp expect host.out &&
	run nobind CUDA_VISIBLE_DEVICES=0,1 -n 2 -b nccl --nobind -- "$VIEW" DDP_BACKEND CUDA_VISIBLE_DEVICES &&
	test "$(sort -u nobind.out)" = "DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=0,1"
'

test_expect_success 'nccl with more ranks than GPUs: refused, with the counts and what to do' '
	run over DDP_RUN_SYSROOT="$PWD/four" DDP_BACKEND=nccl -n 8 -- touch ran &&
	test "$(cat over.rc)" = 2 &&
	grep -q "^ddp-run: DDP_BACKEND=nccl needs a GPU per rank, but 8 ranks would share 4 GPUs ($PWD/four/proc/driver/nvidia/gpus); run -n 4 or fewer, or use --backend host$" over.err &&
	! test -e ran &&
	run nodes CUDA_VISIBLE_DEVICES=0,1 -b nccl -n 6 -N 2 -- touch ran &&
	test "$(cat nodes.rc)" = 2 &&
	grep -q "^ddp-run: --backend nccl needs a GPU per rank, but simulated node 0 has 3 ranks and every node sees the same 2 GPUs (CUDA_VISIBLE_DEVICES=0,1); run at most 2 ranks per node (-n 4 with -N 2), or use --backend host$" nodes.err &&
	run nogpu -b nccl -n 1 -- touch ran &&
	test "$(cat nogpu.rc)" = 2 &&
	grep -q "^ddp-run: --backend nccl needs a GPU per rank, but there is no GPU (CUDA_VISIBLE_DEVICES is unset and neither $PWD/none/proc/driver/nvidia/gpus nor $PWD/none/dev/nvidia\[0-9\]\* shows one); use --backend host, or set CUDA_VISIBLE_DEVICES to the GPUs to use$" nogpu.err &&
	run noranks -- touch ran &&
	test "$(cat noranks.rc)" = 2 &&
	grep -q "^ddp-run: how many ranks? give -n RANKS (without -n ddp-run starts one rank per GPU, and found none: CUDA_VISIBLE_DEVICES is unset" noranks.err &&
	! test -e ran
'

test_expect_success 'a killed rank: named with its signal, the others name it, exit 137' '
	run kill -n 4 -N 2 -- "$FAULT" kill 2 &&
	test "$(cat kill.rc)" = 137 &&
	grep -q "^ddp-run: rank 2 killed by signal 9 (Killed); ranks 0-1,3 failed after it, as victims: rank 2 died" kill.err &&
	test $(grep -c "error: rank 2 died" kill.err) = 3 &&
	within kill 30
'

# Blame at the end: ddp-run names the rank that failed first, not the
# first rank to exit; libddp tells it which ranks failed as victims.
test_expect_success 'a rank that finalizes while the others sleep: the victims name it, so does the last line' '
	run leave -n 4 -N 2 -- "$FAULT" leave 1 &&
	test "$(cat leave.rc)" = 3 &&
	test $(grep -c "error: rank 1 left (ddp_finalize) before ddp_barrier #202$" leave.err) = 3 &&
	tail -n 1 leave.err | grep "^ddp-run: rank [023] exited with status 3, a victim (ranks [0-9,-]* too): rank 1 left (ddp_finalize) before ddp_barrier #202$" &&
	within leave 15
'
test_expect_success 'an absent rank: the last line names it, not its first victim to exit' '
	run absent -n 4 -N 2 -- env DDP_TIMEOUT=2 "$FAULT" absent 2 &&
	test "$(cat absent.rc)" = 143 &&
	tail -n 1 absent.err | grep "^ddp-run: rank 2 killed by signal 15 (Terminated); ranks 0-1,3 failed after it, as victims: rank 2 did not arrive within DDP_TIMEOUT (2 s)" &&
	within absent 20
'

# Not libddp programs: nothing tells the others that rank 1 failed, so
# ddp-run ends them (SIGTERM after 5 s; rank 0 ignores it: SIGKILL 5 s
# later), as srun --ddp ends its step.
test_expect_success 'a rank that exits 3 ends the job: exit 3, the rank named' '
	run exit3 -n 3 -- sh -c "if test \$RANK = 1; then exit 3; fi; if test \$RANK = 0; then trap \"\" TERM; fi; sleep 100" &&
	test "$(cat exit3.rc)" = 3 &&
	grep -q "^ddp-run: rank 1 failed 5 s ago: ending the 2 ranks still running$" exit3.err &&
	grep -q "^ddp-run: rank 1 exited with status 3$" exit3.err &&
	within exit3 20 &&
	! within exit3 9
'

# start_job NAME ARGS...: ddp-run ARGS in the background (pid in $job)
# once each of its ranks printed "ready" to NAME.raw.
start_job () {
	name=$1 n=$3; shift
	"$RUN" "$@" >"$name.raw" 2>"$name.err" &
	job=$!
	for i in $(seq 100); do
		test "$(grep -c ready "$name.raw")" = "$n" && return 0
		sleep 0.1
	done
	return 1
}

# A rank that says ready, then waits in short sleeps, running TRAPS.
waiter="echo ready; while :; do sleep 0.1; done"

test_expect_success 'SIGTERM is passed on: the ranks stop their own way, their status is the exit status' '
	start_job term -n 2 -- sh -c "trap \"echo rank \$RANK got TERM; exit 75\" TERM; $waiter" &&
	kill -TERM $job &&
	{ wait $job; echo $? >term.rc; } &&
	test "$(cat term.rc)" = 75 &&
	sort term.raw >term.out &&
	printf "rank 0 got TERM\nrank 1 got TERM\nready\nready\n" >expect &&
	test_cmp expect term.out &&
	grep -q "^ddp-run: Terminated: passed on to every rank" term.err
'

# A background job of a script starts with SIGINT ignored: ddp-run and its
# ranks keep it so (as nohup's SIGHUP).
test_expect_success 'SIGUSR1 is passed on, the job goes on; a second SIGTERM kills; an ignored SIGINT stays so' '
	start_job usr -n 2 -- sh -c "trap \"echo rank \$RANK got USR1\" USR1; trap \"echo rank \$RANK got TERM\" TERM; $waiter" &&
	kill -USR1 $job &&
	sleep 0.5 &&
	test $(grep -c "got USR1" usr.raw) = 2 &&
	kill -INT $job &&
	sleep 0.5 &&
	kill -0 $job &&
	kill -TERM $job &&
	sleep 0.5 &&
	test $(grep -c "got TERM" usr.raw) = 2 &&
	kill -0 $job &&
	kill -TERM $job &&
	{ wait $job; echo $? >usr.rc; } &&
	test "$(cat usr.rc)" = 137 &&
	grep -q "^ddp-run: Terminated again: killing every rank$" usr.err &&
	! grep -q "Interrupt" usr.err
'

test_expect_success 'bad command lines: exit 2, saying what is wrong and where to look' '
	test_expect_code 2 "$RUN" --bogus -- true 2>bad1 &&
	grep -q "unrecognized option" bad1 && grep -q "^Try .ddp-run --help.\.$" bad1 &&
	test_expect_code 2 "$RUN" -b cuda -n 1 -- true 2>bad2 &&
	grep -q "^ddp-run: --backend .cuda.: give auto, host or nccl$" bad2 &&
	test_expect_code 2 env DDP_BACKEND=gpu "$RUN" -n 1 -- true 2>bad3 &&
	grep -q "^ddp-run: DDP_BACKEND .gpu.: give auto, host or nccl$" bad3 &&
	test_expect_code 2 "$RUN" -p 70000 -n 1 -- true 2>bad4 &&
	grep -q "give a port, 1 to 65535" bad4 &&
	test_expect_code 2 "$RUN" -t -1 -n 1 -- true 2>bad5 &&
	grep -q "give a positive number of seconds" bad5 &&
	test_expect_code 2 env CUDA_VISIBLE_DEVICES="0,,1" "$RUN" -n 1 -- true 2>bad6 &&
	grep -q "^ddp-run: CUDA_VISIBLE_DEVICES=.0,,1. is not a list of GPUs" bad6 &&
	test_expect_code 2 "$RUN" -n 1 2>bad7 &&
	grep -q "^ddp-run: no program to run$" bad7 &&
	test_expect_code 2 "$RUN" -n 0 -- true 2>bad8 &&
	grep -q "give 1 to 4096 ranks" bad8 &&
	run noprog -n 2 -- /nonexistent/prog &&
	test "$(cat noprog.rc)" = 127 &&
	grep -q "^ddp-run: cannot run /nonexistent/prog: No such file or directory$" noprog.err
'

test_expect_success '--help: the usage on stdout, every option, exit 0' '
	"$RUN" --help >help &&
	grep -q "^Usage: ddp-run \[OPTIONS\] \[--\] PROGRAM \[ARGS...\]$" help &&
	for o in --ntasks --backend --nobind --timeout --master-port --verbose \
		--help --nodes --map --kill; do
		grep -q -- "$o" help || { echo "no $o"; return 1; }
	done
'

test_expect_success 'the tests'"'"' ddp-local-run is this program under its old name' '
	cmp "$RUN" "$DDP_PROGS/ddp-local-run" &&
	test_expect_code 2 "$DDP_PROGS/ddp-local-run" -n 1 2>old &&
	grep -q "^ddp-local-run: no program to run$" old
'

test_done

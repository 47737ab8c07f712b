#!/bin/sh
test_description='torch.distributed backend "ddp" (ddp._c10d,
tests/progs/torch_backend.py): every collective on every dtype and
ReduceOp against the result computed locally and gloo'"'"'s, the ops libddp
lacks refused naming the op; DDP training equal to gloo'"'"'s, and FSDP
where torch has it (2.x); a DDP on each of
two groups of two; a rank killed or raising mid-step named by every
survivor within DDP_TIMEOUT + 1 s.  One process first, then srun
--ddp=host on 1 x 2, 2 x 2 and an uneven 2 nodes x 3 ranks'
. "$(dirname "$0")/test-lib.sh"

# The module, torch, a clean environment, ./python as PY.
ddp_torch_setup
PROG=$DDP_SRC_DIR/tests/progs/torch_backend.py

# ok_ranks NAME MODE N: NAME.out has "MODE ok" from each rank 0 .. N-1 and
# no FAIL line (not anchored: the launchers forward the ranks' output in
# pieces, and one rank's line may follow another's before its newline).
ok_ranks () {
	ddp_show "$1.out" &&
	! grep FAIL "$1.out" &&
	ddp_each_rank "$1.out" "$3" "rank @R/$3: $2 ok"
}

# named NAME N VICTIM LIMIT: every rank of N but VICTIM printed an
# exception naming rank VICTIM, after at most LIMIT seconds (not
# anchored, as ok_ranks).
named () {
	ddp_show "$1.out" &&
	for r in $(seq 0 $(( $2 - 1 ))); do
		test "$r" = "$3" && continue
		grep "rank $r: [A-Za-z.]*Error after [0-9.]* s: .*ddp backend: .*rank $3 " "$1.out" ||
			{ echo "rank $r did not name rank $3"; return 1; }
		# then a blocking dist.all_reduce (completed on its own thread)
		grep "rank $r: then all_reduce: PeerError after [0-9.]* s: ddp backend: allreduce of 1 torch.float32 on the world failed: .*rank $3 " "$1.out" ||
			{ echo "rank $r: its blocking all_reduce did not name rank $3"; return 1; }
	done &&
	grep -o "Error after [0-9.]* s:" "$1.out" >"$1.secs" &&
	test $(wc -l <"$1.secs") -ge $(( $2 - 1 )) &&
	awk -v limit="$4" "{ s = \$3 + 0; if (s > limit) { print \"took \" s \" s\"; bad = 1 } }
		END { exit bad }" "$1.secs"
}

test_expect_success 'one process: every op, DDP against gloo, destroy_process_group' '
	DDP_BACKEND=host "$PY" -W ignore "$PROG" ops >one-ops.out 2>one-ops.err ||
		{ cat one-ops.out one-ops.err; false; } &&
	ok_ranks one-ops ops 1 &&
	DDP_BACKEND=host "$PY" -W ignore "$PROG" train 5 >one-train.out 2>one-train.err ||
		{ cat one-train.out one-train.err; false; } &&
	ok_ranks one-train train 1 &&
	DDP_BACKEND=host "$PY" -W ignore "$PROG" destroy >one-destroy.out 2>one-destroy.err ||
		{ cat one-destroy.out one-destroy.err; false; } &&
	ok_ranks one-destroy destroy 1
'

# The local launcher (no cluster): 3 ranks on 2 simulated nodes.
LOCAL=$DDP_PROGS/ddp-local-run
test_expect_success 'ddp-local-run -n 3 -N 2: every op, DDP against gloo' '
	timeout 150 "$LOCAL" -n 3 -N 2 -b host -t 120 -- "$PY" -W ignore "$PROG" ops \
		>local-ops.out 2>local-ops.err || { cat local-ops.out local-ops.err; false; } &&
	ok_ranks local-ops ops 3 &&
	timeout 150 "$LOCAL" -n 3 -N 2 -b host -t 120 -- "$PY" -W ignore "$PROG" train 10 \
		>local-train.out 2>local-train.err || { cat local-train.out local-train.err; false; } &&
	ok_ranks local-train train 3
'

ddp_cluster_require

# FSDP where this torch can import it: not torch 1.13 on Python 3.11
# (Debian 12); torch 2.6 in the Debian 13 stage.
if "$PY" -c "import torch.distributed.fsdp" >/dev/null 2>&1; then
	test_set_prereq FSDP
else
	say "# no FSDP with this torch: $("$PY" -c "import torch.distributed.fsdp" 2>&1 | tail -n 1)"
fi
# A DeviceMesh where this torch has one (2.2 on; not 1.13).
if "$PY" -c "from torch.distributed.device_mesh import init_device_mesh" >/dev/null 2>&1; then
	test_set_prereq MESH
else
	say "# no init_device_mesh with this torch: $("$PY" -c "from torch.distributed.device_mesh import init_device_mesh" 2>&1 | tail -n 1)"
fi
# new_group(use_local_synchronization=True) where this torch has it
# (2.0 on; not 1.13).
LOCALSYNC_PY="import inspect, torch.distributed as d; assert 'use_local_synchronization' in inspect.signature(d.new_group).parameters, 'new_group has no use_local_synchronization'"
if "$PY" -c "$LOCALSYNC_PY" >/dev/null 2>&1; then
	test_set_prereq LOCALSYNC
else
	say "# no use_local_synchronization with this torch: $("$PY" -c "$LOCALSYNC_PY" 2>&1 | tail -n 1)"
fi

# NAME:RANKS:srun's layout
for layout in "1x2:2:-N1 -n2" "2x2:4:-N2 -n4 --ntasks-per-node=2" "2n3:3:-N2 -n3"; do
	name=${layout%%:*}
	rest=${layout#*:}
	n=${rest%%:*}
	args=${rest#*:}
	test_expect_success "srun --ddp=host $args: every op and dtype against the local result and gloo" "
		ddp_srun --ddp=host $args \"\$PY\" -W ignore \"\$PROG\" ops \
			>ops-$name.out 2>ops-$name.err || { cat ops-$name.out ops-$name.err; false; } &&
		ok_ranks ops-$name ops $n
	"
	test_expect_success "srun --ddp=host $args: DDP on ddp ends with gloo's parameters" "
		ddp_srun --ddp=host $args \"\$PY\" -W ignore \"\$PROG\" train 20 \
			>train-$name.out 2>train-$name.err || { cat train-$name.out train-$name.err; false; } &&
		ok_ranks train-$name train $n
	"
	test_expect_success FSDP "srun --ddp=host $args: FSDP on ddp ends with gloo's parameters (and DDP's)" "
		ddp_srun --ddp=host $args \"\$PY\" -W ignore \"\$PROG\" fsdp 6 \
			>fsdp-$name.out 2>fsdp-$name.err || { cat fsdp-$name.out fsdp-$name.err; false; } &&
		ok_ranks fsdp-$name fsdp $n
	"
done

test_expect_success 'srun --ddp=host 2 x 2: a DDP on each of two groups of two, as gloo'"'"'s' '
	ddp_srun --ddp=host -N2 -n4 --ntasks-per-node=2 "$PY" -W ignore "$PROG" subgroup \
		>sub.out 2>sub.err || { cat sub.out sub.err; false; } &&
	ok_ranks sub subgroup 4
'
test_expect_success LOCALSYNC 'srun --ddp=host 2 x 2: groups made by their members alone (use_local_synchronization=True), a DDP on each as gloo'"'"'s, an absent member named, told when late' '
	ddp_srun --ddp=host -N2 -n4 --ntasks-per-node=2 "$PY" -W ignore "$PROG" local \
		>local.out 2>local.err || { cat local.out local.err; false; } &&
	ok_ranks local local 4 &&
	grep "^rank 0/4: local ok.*absent member named after" local.out >absent &&
	awk "{ s = \$(NF - 1) } END { exit !(s + 0 >= 2.9 && s + 0 < 10) }" absent &&
	grep "^rank 1/4: local ok.*late member told after" local.out >late &&
	awk "{ s = \$(NF - 1) } END { exit !(s + 0 < 2) }" late
'
# torch's device_mesh calls new_group through a name of its own, bound
# before ddp.torch wrapped it: the wrapper reaches it too.
test_expect_success MESH 'srun --ddp=host 2 nodes x 3: a (2, 3) DeviceMesh on ddp: its groups, their sums, a DDP on one dimension as gloo'"'"'s' '
	ddp_srun --ddp=host -N2 -n6 --ntasks-per-node=3 "$PY" -W ignore "$PROG" mesh \
		>mesh.out 2>mesh.err || { cat mesh.out mesh.err; false; } &&
	ok_ranks mesh mesh 6
'

# The survivors exit 0 after printing; the victim does not: srun fails.
test_expect_success 'srun --ddp=host 2 x 2: rank 1 killed in step 3, every survivor names it within DDP_TIMEOUT + 1 s' '
	DDP_TIMEOUT=5 ddp_srun --ddp=host -N2 -n4 --ntasks-per-node=2 \
		"$PY" -W ignore "$PROG" kill 1 >kill.out 2>kill.err ;
	cat kill.err &&
	named kill 4 1 6
'

test_expect_success 'srun --ddp=host 2 x 2: rank 2 raises in step 3, every survivor names it within DDP_TIMEOUT + 1 s' '
	DDP_TIMEOUT=5 ddp_srun --ddp=host -N2 -n4 --ntasks-per-node=2 \
		"$PY" -W ignore "$PROG" raise 2 >raise.out 2>raise.err ;
	cat raise.err &&
	named raise 4 2 6 &&
	grep "rank 2/4.* raised ValueError: bad batch 3" raise.err
'

test_done

#!/bin/sh
test_description='srun --ddp gives every task the right RANK, WORLD_SIZE, ... for any layout'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

VARS="RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK NNODES MASTER_ADDR
MASTER_PORT DDP_BACKEND SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURMD_NODENAME"

# view ARGS...: srun ARGS rankview VARS, one line per task.
view () {
	# shellcheck disable=SC2086
	ddp_srun "$@" "$DDP_PROGS/rankview" $VARS
}

# check_env FILE NTASKS NNODES: every variable of every task is right.
# Slurm's own SLURM_PROCID/LOCALID/NODEID are the reference for the ranks;
# LOCAL_WORLD_SIZE is counted from the lines; the port is one for the whole
# step and inside the default range; MASTER_ADDR is one for the whole step,
# the address the host name of rank 0's node (the step's first) has on the
# nodes: 127.0.0.1 on a loopback test cluster, its eth0 address on a
# networked one.
check_env () {
	local addrs="" n
	for n in $(sed -n "s/.* SLURMD_NODENAME=\([^ ]*\).*/\1/p" "$1" | sort -u); do
		addrs="$addrs $n=$(ddp_node_addr "$n")"
	done
	awk -v ntasks="$2" -v nnodes="$3" -v addrs="$addrs" '
	function bad(msg) { print "line " NR ": " msg ": " $0; errors++ }
	BEGIN {
		k = split(addrs, a, " ")
		for (i = 1; i <= k; i++) { split(a[i], kv, "="); addr[kv[1]] = kv[2] }
	}
	{
		delete v
		for (i = 1; i <= NF; i++) {
			eq = index($i, "=")
			v[substr($i, 1, eq - 1)] = substr($i, eq + 1)
		}
		if (v["RANK"] != v["SLURM_PROCID"]) bad("RANK != SLURM_PROCID")
		if (v["LOCAL_RANK"] != v["SLURM_LOCALID"]) bad("LOCAL_RANK != SLURM_LOCALID")
		if (v["NODE_RANK"] != v["SLURM_NODEID"]) bad("NODE_RANK != SLURM_NODEID")
		if (v["WORLD_SIZE"] != ntasks) bad("WORLD_SIZE != " ntasks)
		if (v["NNODES"] != nnodes) bad("NNODES != " nnodes)
		if (v["RANK"] == 0) master = addr[v["SLURMD_NODENAME"]]
		if (v["MASTER_ADDR"] !~ /^[0-9.]+$/) bad("MASTER_ADDR not an IPv4 address")
		if (maddr != "" && v["MASTER_ADDR"] != maddr) bad("MASTER_ADDR differs between tasks")
		maddr = v["MASTER_ADDR"]
		if (v["DDP_BACKEND"] != "host") bad("DDP_BACKEND")
		p = v["MASTER_PORT"]
		if (p !~ /^[0-9]+$/ || p < 29500 || p > 29999) bad("MASTER_PORT range")
		if (port != "" && p != port) bad("MASTER_PORT differs between tasks")
		port = p
		if (seen[v["RANK"]]++) bad("RANK twice")
		if (v["RANK"] == 0 && v["NODE_RANK"] != 0) bad("rank 0 not on node 0")
		node = v["NODE_RANK"]
		count[node]++
		lws[node, v["LOCAL_WORLD_SIZE"]]++
		lr[node, v["LOCAL_RANK"]]++
		lines++
	}
	END {
		if (lines != ntasks) { print lines " lines, want " ntasks; errors++ }
		if (master == "" || maddr != master) {
			print "MASTER_ADDR " maddr ", want " master " (rank 0 node)"; errors++
		}
		for (r = 0; r < ntasks; r++)
			if (!seen[r]) { print "no RANK " r; errors++ }
		for (node in count) {
			if (lws[node, count[node]] != count[node]) {
				print "node " node ": LOCAL_WORLD_SIZE != " count[node]; errors++
			}
			for (l = 0; l < count[node]; l++)
				if (lr[node, l] != 1) { print "node " node ": LOCAL_RANK " l; errors++ }
		}
		n = 0; for (node in count) n++
		if (n != nnodes) { print n " nodes used, want " nnodes; errors++ }
		exit errors ? 1 : 0
	}' "$1"
}

test_expect_success '-N2 -n4: every variable right' '
	view --ddp=host -N2 -n4 >n2n4 &&
	cat n2n4 &&
	check_env n2n4 4 2
'
test_expect_success '-N2 -n3 (uneven): every variable right' '
	view --ddp=host -N2 -n3 >n2n3 &&
	cat n2n3 &&
	check_env n2n3 3 2
'
test_expect_success '--ntasks-per-node=2: LOCAL_WORLD_SIZE=2 everywhere' '
	view --ddp=host -N2 --ntasks-per-node=2 >tpn &&
	cat tpn &&
	check_env tpn 4 2 &&
	test $(grep -c " LOCAL_WORLD_SIZE=2 " tpn) = 4
'
test_expect_success '-m cyclic: ranks alternate nodes, variables follow' '
	view --ddp=host -N2 -n4 -m cyclic >cyclic &&
	cat cyclic &&
	check_env cyclic 4 2 &&
	grep -q "^RANK=1 LOCAL_RANK=0 .* NODE_RANK=1 " cyclic &&
	grep -q "^RANK=2 LOCAL_RANK=1 .* NODE_RANK=0 " cyclic
'
test_expect_success 'the checker catches a wrong value' '
	sed "s/ NNODES=2 / NNODES=3 /" n2n4 >broken &&
	test_must_fail check_env broken 4 2 &&
	sed "1s/^RANK=[0-9]* /RANK=7 /" n2n4 >broken2 &&
	! check_env broken2 4 2
'
test_expect_success 'bare --ddp (auto) without GPUs is host' '
	ddp_srun --ddp -N1 -n1 "$DDP_PROGS/rankview" DDP_BACKEND >auto &&
	echo DDP_BACKEND=host >auto.expected &&
	test_cmp auto.expected auto
'
test_expect_success '--ddp=off and no --ddp: no ddp variable at all' '
	ddp_srun --ddp=off -N1 -n1 env >off.env &&
	ddp_srun -N1 -n1 env >none.env &&
	! grep -E "^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|NODE_RANK|NNODES|MASTER_ADDR|MASTER_PORT|DDP_BACKEND|PMIX_RANK)=" off.env none.env
'
test_expect_success 'sbatch: #SBATCH --ddp reaches every step of the job' '
	cat >job.sh <<-EOF &&
	#!/bin/sh
	#SBATCH --ddp=host
	#SBATCH -N2 -n4
	"$DDP_PROGS/rankview" RANK DDP_BACKEND >batch.env
	srun "$DDP_PROGS/rankview" $(echo $VARS) >step0.out
	srun "$DDP_PROGS/rankview" $(echo $VARS) >step1.out
	srun --ddp=off "$DDP_PROGS/rankview" RANK >off.out
	EOF
	timeout 60 sbatch --wait -o job.out job.sh &&
	cat job.out step0.out step1.out &&
	check_env step0.out 4 2 &&
	check_env step1.out 4 2 &&
	echo "RANK=- DDP_BACKEND=-" >batch.expected &&
	test_cmp batch.expected batch.env &&
	test $(grep -c "^RANK=-$" off.out) = 4
'
test_expect_success 'sbatch: two steps of one job get different MASTER_PORTs' '
	p0=$(sed -n "s/.* MASTER_PORT=\([0-9]*\) .*/\1/p" step0.out | sort -u) &&
	p1=$(sed -n "s/.* MASTER_PORT=\([0-9]*\) .*/\1/p" step1.out | sort -u) &&
	test -n "$p0" && test -n "$p1" && test "$p0" != "$p1"
'
test_done

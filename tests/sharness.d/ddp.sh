# sharness.d/ddp.sh - project helpers for the sharness tests.
#
# Cluster tests call `ddp_cluster_require [NODES]` once, before their first
# test_expect_success.  It points srun (SLURM_CONF) at the run's shared test
# cluster, started by t0000-cluster-start.t (DDP_TEST_NODES nodes, default
# 16) and stopped by t9999-cluster-stop.t.  A test run alone, or one that
# needs more NODES (default 2) than the shared cluster has, starts a private
# cluster of NODES nodes and stops it when it exits.  When no cluster can be
# started the test file is skipped with the reason, unless
# DDP_REQUIRE_CLUSTER=1 (contrib/check.sh and `make check-cluster` set it),
# which turns that into a failure.

DDP_CLUSTER=$DDP_SRC_DIR/tests/cluster/ddp-test-cluster
DDP_CLUSTER_STATE=$DDP_BUILD_DIR/tests/.cluster
DDP_PROGS=$DDP_BUILD_DIR/tests/progs
DDP_PLUGIN=${DDP_PLUGIN-$DDP_BUILD_DIR/spank/ddp.so}
export DDP_PLUGIN
# The shared cluster's size: enough for the scale tests (t0250).
DDP_TEST_NODES=${DDP_TEST_NODES:-16}

# ddp_cluster_unavailable WHY: skip this file, or fail it when required.
ddp_cluster_unavailable () {
    if [ "${DDP_REQUIRE_CLUSTER:-0}" = 1 ]; then
        echo "Bail out! the test cluster is required (DDP_REQUIRE_CLUSTER=1) but: $1"
        EXIT_OK=t
        exit 1
    fi
    skip_all="no test cluster: $1"
    test_done
}

# ddp_shared_cluster: print the shared cluster's directory if it is up.
ddp_shared_cluster () {
    local dir
    [ -f "$DDP_CLUSTER_STATE" ] || return 1
    dir=$(cat "$DDP_CLUSTER_STATE")
    "$DDP_CLUSTER" status "$dir" || return 1
    echo "$dir"
}

# ddp_cluster_require [NODES]: point srun at a cluster of NODES nodes or more.
ddp_cluster_require () {
    local need=${1:-2} dir
    if dir=$(ddp_shared_cluster) &&
       [ "$(cat "$dir/nodes" 2>/dev/null || echo 0)" -ge "$need" ]; then
        . "$dir/env"
        return 0
    fi
    ddp_cluster_private --nodes "$need"
}

# ddp_cluster_require_net [NODES [START-OPTIONS...]]: ddp_cluster_require on
# a cluster whose nodes have their own network namespaces and addresses
# (ddp-test-cluster start --net): the shared cluster when it is one and no
# START-OPTIONS (--data-net, --docker, --dead-if, --mtu N, --rate R) are
# given, else a private one started with --net and START-OPTIONS.
ddp_cluster_require_net () {
    local need=${1:-2} dir
    [ $# -gt 0 ] && shift
    if [ $# = 0 ] && dir=$(ddp_shared_cluster) && [ -f "$dir/net.conf" ] &&
       [ "$(cat "$dir/nodes" 2>/dev/null || echo 0)" -ge "$need" ]; then
        . "$dir/env"
        return 0
    fi
    ddp_cluster_private --nodes "$need" --net "$@"
}

# ddp_cluster_private START-OPTIONS...: start a private cluster, point srun
# at it and stop it when the test file exits.
ddp_cluster_private () {
    local why dir
    why=$("$DDP_CLUSTER" check) || ddp_cluster_unavailable "$why"
    dir=$("$DDP_CLUSTER" start "$@" 2>"$DDP_BUILD_DIR/tests/.cluster-start.err") \
        || ddp_cluster_unavailable "start $* failed: $(tail -n 30 "$DDP_BUILD_DIR/tests/.cluster-start.err")"
    rm -f "$DDP_BUILD_DIR/tests/.cluster-start.err"
    DDP_PRIVATE_CLUSTER=$dir
    # Keep the test's exit status: stopping the cluster must not replace it.
    trap 'ddp_rc=$?; "$DDP_CLUSTER" stop "$DDP_PRIVATE_CLUSTER"; (exit $ddp_rc); die' EXIT
    . "$dir/env"
    say "# using a private test cluster in $dir"
}

# ddp_cluster_nodes: the nodes of the cluster in use, n1 to nN, one a line.
ddp_cluster_nodes () {
    seq -f 'n%g' 1 "${DDP_CLUSTER_NODES:?ddp_cluster_require first}"
}

# ddp_cluster_pgrep PATTERN: pgrep -f PATTERN, of the cluster in use only:
# another cluster on the machine (the Debian 13 stage's, running beside
# this suite) numbers its jobs from 1 too, and its "slurmstepd: [2.0]" is
# not this one's.  A slurmstepd carries no mark of its cluster in its
# environment, but it runs in its node's mount namespace, which is its
# slurmd's (ddp-test-cluster pids lists the slurmds).  The pids, one a
# line; status 1 when none.
ddp_cluster_pgrep () {
    local ours p ns found=1
    ours=$("$DDP_CLUSTER" pids "$DDP_CLUSTER_DIR" 2>/dev/null |
        while read -r p; do readlink "/proc/$p/ns/mnt"; done | sort -u)
    for p in $(pgrep -f "$1"); do
        ns=$(readlink "/proc/$p/ns/mnt" 2>/dev/null) || continue
        printf '%s\n' "$ours" | grep -qxF "$ns" || continue
        echo "$p"
        found=0
    done
    return $found
}

# ddp_node_exec NODE CMD...: run CMD on test node NODE, in its network,
# mount and UTS namespaces (a neighbour of the job there: on a networked
# cluster (ddp-test-cluster start --net) the machine's own namespace is not
# on any node).  The command replaces nsenter: $! of `ddp_node_exec ... &`
# is CMD's pid.
ddp_node_exec () {
    "$DDP_CLUSTER" exec "$DDP_CLUSTER_DIR" "$@"
}

# ddp_node_addr NODE: the IPv4 address NODE's host name has on the nodes:
# 127.0.0.1 on a loopback test cluster, its eth0 address (198.18.0.I) on a
# networked one (ddp-test-cluster start --net).
ddp_node_addr () {
    "$DDP_CLUSTER" exec "$DDP_CLUSTER_DIR" "$1" getent ahostsv4 "$1" |
        awk 'NR == 1 { print $1 }'
}

# ddp_slurm_version: the Slurm of srun as one number, MAJOR * 100 + MINOR
# (2205 for 22.05.8, 2411 for 24.11.5), for behaviour that differs by
# version; 0 when srun does not say.
ddp_slurm_version () {
    srun --version 2>/dev/null |
        sed -n 's/^slurm[^ ]* \([0-9][0-9]*\)\.0*\([0-9][0-9]*\)\..*/\1 \2/p' |
        { read -r a b && echo $(( a * 100 + b )) || echo 0; }
}

# DDP_KILLED_SEEN: what a survivor's diagnosis may say of a rank killed
# with SIGKILL, as a grep BRE: its watch refuses the connection, or, while
# the kernel is still tearing the process down under load, does not take it
# within the window (seen in rpmbuild's `make check` for t0405, and under
# ASan in CI's san stage for t0403: "cannot be reached: no connection to it
# within 1.0 s").
DDP_KILLED_SEEN='\(is gone: its process exited (connection refused)\|cannot be reached: no connection to it within [0-9.]* s\)'

# ddp_srun ARGS...: srun with a bounded run time so a hang fails the test.
ddp_srun () {
    timeout --kill-after=5 "${DDP_SRUN_TIMEOUT:-60}" srun "$@"
}

# ddp_wait_idle SECS: wait until no job is queued and every node is idle.
# srun returns when its tasks have ended, before Slurm has given back their
# CPUs (the job is still completing): a test whose layout depends on free
# CPUs (block distribution filling the first node) waits for this first.
ddp_wait_idle () {
    local end busy
    end=$(( $(date +%s) + $1 ))
    while :; do
        busy=$(squeue -h -o "%i %T" 2>&1; sinfo -h -N -o "%N %T" 2>&1 |
               grep -v " idle$")
        test -z "$busy" && return 0
        test $(date +%s) -lt $end || break
        sleep 0.2
    done
    echo "the cluster is not idle after $1 s:" $busy >&2
    # What holds it, by name (a job an earlier test left is named after
    # its script) and with its steps, pending ones too.
    { squeue -o "%.8i %.9T %.10M %.16j %N"; squeue -s; } 2>&1 | sed 's/^/  /' >&2
    return 1
}

# ddp_at_bound T0: true when the time since T0 (date +%s) reached ddp_srun's
# bound (DDP_SRUN_TIMEOUT, 60 s).  Judges srun's 137 (KILL): at the bound
# it is timeout(1)'s; before it, Slurm's (24.11's srun exits 137 when Slurm
# SIGKILLs a task of a step that is ending).
ddp_at_bound () {
    [ $(( $(date +%s) - $1 )) -ge "${DDP_SRUN_TIMEOUT:-60}" ]
}

# ddp_step_fails SRUN-ARGS...: ddp_srun SRUN-ARGS, true when the step failed
# as a step does.  srun exits with the highest status among its tasks, so a
# step whose task failed on one node while a task on another was still
# running ends with 143 (that task got srun's SIGTERM) or 1, depending on
# which came first; both are a failed step.  Not a failed step: success,
# what timeout(1) reports (124 its limit, 125 its own failure, 126 and 127
# a command it could not run), a signal that is not srun's SIGTERM (srun
# or a task crashing).  137 (KILL) is judged by the time taken
# (ddp_at_bound).
ddp_step_fails () {
    local rc=0 t0
    t0=$(date +%s)
    ddp_srun "$@" || rc=$?
    case $rc in
    0) echo "ddp_step_fails: the step succeeded: srun $*" >&2; return 1 ;;
    143) return 0 ;;
    137) ddp_at_bound "$t0" || return 0
        echo "ddp_step_fails: srun $* was killed at the time bound" >&2
        return 1 ;;
    12[4-9]|1[3-9][0-9]|2[0-9][0-9])
        echo "ddp_step_fails: srun $* ended with status $rc: not a step" \
             "refused or failed by its tasks" >&2
        return 1 ;;
    esac
}

# ddp_check_run NAME NTASKS CHECK-ARGS SRUN-ARGS...: run progs/ddp_check
# (CHECK-ARGS: its -q, -l COUNT) under srun SRUN-ARGS, output in NAME.out
# and NAME.err; true when srun succeeded and all NTASKS tasks report 0
# failures.
ddp_check_run () {
    local name=$1 n=$2 args=$3 rc
    shift 3
    # shellcheck disable=SC2086
    ddp_srun "$@" "$DDP_PROGS/ddp_check" $args >"$name.out" 2>"$name.err"
    rc=$?
    cat "$name.out" "$name.err"
    test $rc = 0 &&
    test "$(grep -c "^ddp_check rank .*/$n .* 0 failed in all" "$name.out")" = "$n"
}

# ddp_wait_job_gone JOBID SECS: wait until the job has left the queue.  Slurm
# holds a requeued job for its credential lifetime plus one second (121 s
# here); once it is pending for that, its start is moved to two seconds
# later (a start in the very second of the requeue is refused: credential
# revoked), but only once every slurmstepd of the job's last run has ended
# (all nodes are on this machine): the hold is what keeps them apart in
# Slurm, and a step of the new run that starts beside its namesake of the
# old one fails ("Cannot bind() UNIX socket .../stepd.slurm.pmix.J.0:
# Address already in use") while srun still exits 0 (Slurm 22.05).  A start
# time that has passed is set again to now: the update runs the scheduler,
# which otherwise may not look at the job before its next backfill pass.
ddp_wait_job_gone () {
    local end s st now
    end=$(( $(date +%s) + $2 ))
    while now=$(date +%s); test $now -lt $end; do
        s=$(squeue -h -j "$1" -o "%T %r %S" 2>/dev/null)
        test -z "$s" && return 0
        case "$s" in
        PENDING*BeginTime*)
            st=$(date -d "${s##* }" +%s 2>/dev/null) || st=0
            if test "$st" -gt $((now + 5)); then
                ddp_cluster_pgrep "^slurmstepd: \\[$1\\." >/dev/null ||
                    scontrol update jobid="$1" starttime=now+2
            elif test "$st" -lt $((now - 1)); then
                scontrol update jobid="$1" starttime=now
            fi ;;
        esac
        sleep 0.3
    done
    echo "job $1 still queued after $2 s: $s"
    return 1
}

# ddp_each_rank FILE N BRE: FILE has a line matching BRE (grep, not
# anchored: launchers forward the ranks' output in pieces, and one rank's
# line may follow another's before its newline) for each rank 0 .. N-1,
# "@R" in BRE standing for the rank; says which rank has none.
ddp_each_rank () {
	local r
	for r in $(seq 0 $(( $2 - 1 ))); do
		grep -q "$(printf '%s\n' "$3" | sed "s/@R/$r/g")" "$1" ||
			{ echo "no line '$3' in $1 from rank $r"; return 1; }
	done
}

# ddp_show FILE...: print FILEs for the verbose log with "# " before each
# line, so that a program's own TAP lines in them ("ok 1 - ...") are not
# read by prove as the test file's.
ddp_show () {
    sed 's/^/# /' "$@"
}

# ddp_python_require: read what configure found for the Python module
# (libjob/python/build.env: DDP_PYTHON_BUILT, DDP_PYTHON, DDP_PYTHON_STAGE,
# DDP_PYTHON_WHY, ...); skip the whole file, saying why, when there is no
# such file or the module was not built.
ddp_python_require () {
    local env=$DDP_BUILD_DIR/libjob/python/build.env
    if ! test -f "$env"; then
        skip_all="no $env: configure this build tree first"
        test_done
    fi
    . "$env"
    if test "$DDP_PYTHON_BUILT" != yes; then
        skip_all="configure did not build the Python module: $DDP_PYTHON_WHY"
        test_done
    fi
}

# ddp_torch_missing WHY: skip this file, saying why; DDP_REQUIRE_TORCH=1
# (contrib/check.sh, which installs python3-torch) makes that a failure.
ddp_torch_missing () {
	if test "${DDP_REQUIRE_TORCH:-0}" = 1; then
		echo "Bail out! PyTorch is required (DDP_REQUIRE_TORCH=1) but: $1"
		EXIT_OK=t
		exit 1
	fi
	skip_all="no PyTorch for the module: $1"
	test_done
}

# ddp_torch_find: after ddp_python_require, set TORCH_PY to an
# interpreter: the one the module was built for (configure's python3)
# if it has torch; else Debian's /usr/bin/python3 (python3-torch), which
# runs the same build of the module when its extension suffix is the
# module's (the same Python minor version: the C API is stable within it,
# e.g. pyenv's 3.11.7 and Debian's 3.11.2).  DDP_TORCH_PYTHON picks another.
# Sets DDP_PYTHON_MOD (the module's .so), exports PYTHONPATH (the module's
# stage) and PYTHONDONTWRITEBYTECODE; returns 1, with the reason in
# TORCH_WHY, when no interpreter fits.
ddp_torch_find () {
	local mod suffix why= py s
	PYTHONPATH=$DDP_PYTHON_STAGE
	PYTHONDONTWRITEBYTECODE=1
	export PYTHONPATH PYTHONDONTWRITEBYTECODE
	unset PYTHONHOME PYTHONSTARTUP
	mod=$(ls "$DDP_PYTHON_STAGE"/ddp/_ddp*.so 2>/dev/null | head -n 1)
	suffix=${mod##*/_ddp}
	why=
	TORCH_PY=
	for py in ${DDP_TORCH_PYTHON:-} "$DDP_PYTHON" /usr/bin/python3; do
		test -x "$py" || { why="$why; $py: not found"; continue; }
		# Found, not imported (seconds): a torch that fails to import fails.
		if ! "$py" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)' >/dev/null 2>&1; then
			why="$why; $py: no torch (apt-get install python3-torch)"
			continue
		fi
		s=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
		if test "$s" != "$suffix"; then
			why="$why; $py has torch but loads modules $s, not the module's $suffix: configure --with-python=$py"
			continue
		fi
		TORCH_PY=$py
		break
	done
	DDP_PYTHON_MOD=$mod
	TORCH_WHY="module $mod (for $DDP_PYTHON)${why}"
	test -n "$TORCH_PY"
}

# ddp_torch_require: ddp_torch_find, or skip the file (ddp_torch_missing).
ddp_torch_require () {
	ddp_torch_find || ddp_torch_missing "$TORCH_WHY"
}

# ddp_torch_setup: what a test of the module with torch needs first: the
# module of this build (ddp_python_require), an interpreter with torch for
# it (ddp_torch_require), the launchers' and libddp's variables of the
# caller unset, ./python (ddp_torch_python) as PY, and a line saying which
# torch runs.
ddp_torch_setup () {
	ddp_python_require
	ddp_torch_require
	unset PMIX_NAMESPACE SLURM_STEP_NUM_TASKS WORLD_SIZE RANK DDP_BOOTSTRAP
	unset DDP_TIMEOUT DDP_INIT_TIMEOUT DDP_DEBUG DDP_BACKEND DDP_STOP_SIGNALS
	unset DDP_CHECK SLURM_RESTART_COUNT MASTER_ADDR MASTER_PORT
	ddp_torch_python
	PY=$PWD/python
	say "# PyTorch $("$TORCH_PY" -c 'import torch; print(torch.__version__)') under $TORCH_PY, module $DDP_PYTHON_MOD"
}

# ddp_python_script MODULE INTERP [CXX_LIB [NAME]]: write ./NAME (python
# unless given), which runs INTERP.  When MODULE (the built _ddp*.so) carries
# ASan (a sanitizer build), the interpreter does not: the ASan runtime is
# preloaded (and CXX_LIB after it, when given), and Python's own allocations
# left at exit are not reported as the module's leaks.
ddp_python_script () {
	local asan
	asan=$(ldd "$1" 2>/dev/null |
		sed -n "s/^[[:space:]]*libasan[^ ]* => \([^ ]*\) .*/\1/p" | head -n 1)
	{
		echo "#!/bin/sh"
		if test -n "$asan"; then
			echo "LD_PRELOAD=$asan${3:+:$3}\${LD_PRELOAD:+:\$LD_PRELOAD}"
			echo "ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0"
			echo "export LD_PRELOAD ASAN_OPTIONS"
		fi
		echo "exec \"$2\" \"\$@\""
	} >"${4:-python}" &&
	chmod +x "${4:-python}"
}

# ddp_torch_python [NAME]: write ./NAME (python unless given), which runs
# TORCH_PY (ddp_torch_find first), as ddp_python_script does.  In a sanitizer
# build libstdc++ is preloaded with ASan: ASan finds the C++ runtime's
# __cxa_throw when it starts, and without it there the first exception torch
# throws (gloo's threads, when a peer closes) is an ASan "CHECK failed:
# real___cxa_throw" and exit 86.
ddp_torch_python () {
	local cxx=
	if ldd "$DDP_PYTHON_MOD" 2>/dev/null | grep -q libasan; then
		cxx=$(ldd "$(dirname "$("$TORCH_PY" -c 'import torch; print(torch.__file__)')")/_C"*.so 2>/dev/null |
			sed -n "s/^[[:space:]]*libstdc++[^ ]* => \([^ ]*\) .*/\1/p" | head -n 1)
	fi
	ddp_python_script "$DDP_PYTHON_MOD" "$TORCH_PY" "$cxx" "${1:-python}"
}

# ddp_wait_for_line FILE PATTERN SECS: wait until a line of FILE matches
# PATTERN (grep); fail, saying so, after SECS seconds.
ddp_wait_for_line () {
    local end=$(( $(date +%s) + $3 ))
    until grep -q "$2" "$1" 2>/dev/null; do
        test "$(date +%s)" -lt "$end" || { echo "no '$2' in $1"; return 1; }
        sleep 0.1
    done
}

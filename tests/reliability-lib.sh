# reliability-lib.sh - helpers for the failure tests (tests/t08NN-*.t).
#
# Sourced after test-lib.sh and ddp_cluster_require.  The tests start
# progs/ddp_victim under `srun --ddp=host`, break one rank (kill -9 through
# the pid file it writes, or a mode where it misbehaves), and check:
#   - the step ends within REL_BOUND seconds (default 15) with DDP_TIMEOUT=
#     REL_TIMEOUT (default 5), and srun exits non-zero;
#   - every surviving rank failed a call (its stdout line), and libddp's error
#     on its stderr ("[ddp rank R/N] ...") names the rank(s) at fault;
#   - nothing is left: no process of the run, and on each node no new entry
#     in /tmp (each node's private one) or /dev/shm, no socket or temporary
#     file in the run's directory.
# DDP_STRESS=N repeats each scenario N times (default: the few in each test).

REL_TIMEOUT=${REL_TIMEOUT:-5}
REL_BOUND=${REL_BOUND:-15}
REL_NTASKS=${REL_NTASKS:-4}

# rel_repeats DEFAULT: how many times to run a scenario.
rel_repeats () {
    echo "${DDP_STRESS:-$1}"
}

# rel_slurmd_pid NODE: the pid of this cluster's slurmd for NODE (its pid
# file, checked against the process's command line).
rel_slurmd_pid () {
    local pid cmd
    pid=$(cat "$DDP_CLUSTER_DIR/run/slurmd-$1.pid" 2>/dev/null) || return 1
    cmd=$( { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null) || return 1
    case "$cmd" in
        "slurmd -f $DDP_CLUSTER_DIR/etc/slurm.conf -N $1 "*) echo "$pid" ;;
        *) return 1 ;;
    esac
}

# rel_snapshot: what a run could leave on the nodes: each node's /tmp and
# /dev/shm as that node's slurmd sees them (private mount namespaces), on
# every node of the cluster, wherever Slurm placed the step.  The source
# and build trees are left out: a clone under /tmp (its tests' scratch
# directories come and go there) is not something a run left.
rel_snapshot () {
    local node pid
    for node in $(ddp_cluster_nodes); do
        pid=$(rel_slurmd_pid "$node") || { echo "$node: no slurmd"; continue; }
        for d in tmp dev/shm; do
            ( cd "/proc/$pid/root/$d" 2>/dev/null && find . -mindepth 1 \
                  -maxdepth 3 2>/dev/null ) | sed "s|^\.|$node:/$d|"
        done
    done | awk -v src="${DDP_SRC_DIR:-}" -v bld="${DDP_BUILD_DIR:-}" '
        function inside(p, dir) { return dir != "" && (p == dir || index(p, dir "/") == 1) }
        { p = $0; sub(/^[^:]*:/, "", p) }
        !inside(p, src) && !inside(p, bld)' | sort
}

# rel_snapshot_sees NODE: the leftover check works on NODE: a file a step
# leaves in NODE's /tmp shows in the snapshot (and is removed again).
rel_snapshot_sees () {
    rel_snapshot >"snap.$1.before" &&
    ddp_srun -N1 -n1 -w "$1" touch /tmp/rel-canary &&
    rel_snapshot >"snap.$1.after" &&
    ddp_srun -N1 -n1 -w "$1" rm /tmp/rel-canary &&
    diff "snap.$1.before" "snap.$1.after" | grep -x "> $1:/tmp/rel-canary"
}

# rel_run_procs DIR: processes (not zombies) whose command line names DIR.
rel_run_procs () {
    ps -eo pid=,stat=,args= | awk -v d="$1" '$2 !~ /^Z/ && index($0, d) { print }' \
        | grep -v -e "awk -v d=" -e "grep -v" || true
}

# rel_wait_file FILE SECS: wait until FILE exists.
rel_wait_file () {
    local end=$(( $(date +%s) + $2 ))
    while [ ! -e "$1" ]; do
        [ "$(date +%s)" -lt $end ] || return 1
        sleep 0.1
    done
}

# rel_start NAME MODE VICTIMS [SRUN ARGS...]: start ddp_victim MODE in the
# background in run directory NAME (recreated); DDP_VICTIM_RANKS=VICTIMS.
# Sets REL_DIR, REL_PID (the srun wrapper).
# REL_WRAP, when set, is a command (words) the tasks run ddp_victim under,
# such as "env -u MASTER_PORT".
rel_start () {
    local name=$1 mode=$2 victims=$3
    shift 3
    REL_DIR=$PWD/$name
    rm -rf "$REL_DIR" && mkdir -p "$REL_DIR"
    rel_snapshot >"$REL_DIR.before"
    rm -f "$REL_DIR".o.* "$REL_DIR".e.*
    # Each task's output goes to its own files, written by slurmstepd: srun
    # itself may drop the last lines of a task when the step is torn down
    # after a task was killed (seen: a survivor's final stdout line lost).
    # --kill-on-bad-exit=0: a --ddp step ends as a whole when a task fails
    # (the plugin's default, tested in t0160); here the survivors must live
    # on to show what libddp tells them about the failed rank.
    env DDP_TIMEOUT="$REL_TIMEOUT" DDP_VICTIM_RANKS="$victims" \
        timeout --kill-after=5 90 srun --ddp=host --kill-on-bad-exit=0 "$@" \
        --output="$REL_DIR.o.%t" --error="$REL_DIR.e.%t" \
        $REL_WRAP "$DDP_PROGS/ddp_victim" "$mode" "$REL_DIR" >"$REL_DIR.out" 2>"$REL_DIR.err" &
    REL_PID=$!
    REL_T0=$(date +%s.%N)
}

# rel_wait: wait for the srun started by rel_start; sets REL_RC and
# REL_ELAPSED (seconds since REL_T0, which rel_kill resets).
rel_wait () {
    local f
    wait "$REL_PID"
    REL_RC=$?
    REL_ELAPSED=$(echo "$REL_T0 $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
    say "rc=$REL_RC after ${REL_ELAPSED}s"
    # srun's own messages first, then every task's output.
    for f in "$REL_DIR".o.*; do [ -f "$f" ] && cat "$f" >>"$REL_DIR.out"; done
    for f in "$REL_DIR".e.*; do [ -f "$f" ] && cat "$f" >>"$REL_DIR.err"; done
    return 0
}

# rel_kill RANK [DELAY]: once RANK wrote its pid file (30 s at most), wait
# DELAY seconds (default 0.3: into the loop), then kill -9 it.
rel_kill () {
    local pid
    rel_wait_file "$REL_DIR/pid.$1" 30 || {
        say "rank $1 never became ready"; kill "$REL_PID"; return 1; }
    sleep "${2:-0.3}"
    pid=$(cut -d' ' -f1 "$REL_DIR/pid.$1")
    REL_T0=$(date +%s.%N)
    kill -9 "$pid" || { say "kill -9 $pid (rank $1) failed"; return 1; }
}

# rel_show: the run's output, for the log.
rel_show () {
    say "--- stdout"; cat "$REL_DIR.out"
    say "--- stderr"; cat "$REL_DIR.err"
}

# rel_check_bound: the step ended in time and srun exited non-zero (137 is
# srun reporting the task killed by SIGKILL; the 90 s timeout around srun
# cannot have fired within the bound).
rel_check_bound () {
    if [ "$REL_RC" = 0 ] || [ "$REL_RC" = 124 ]; then
        say "srun exit $REL_RC: expected a failure of the step itself"
        return 1
    fi
    awk -v e="$REL_ELAPSED" -v b="$REL_BOUND" 'BEGIN { exit !(e < b) }' || {
        say "the step took ${REL_ELAPSED}s (bound ${REL_BOUND}s)"; return 1; }
}

# rel_names LINE RANKS: true when LINE (without its "[ddp rank R/N] " prefix)
# says "rank" and names every rank of the comma-separated RANKS as a number.
rel_names () {
    local msg r
    # Numbers that are not the culprits: who noticed, and durations.
    msg=$(echo "${1#*] }" | sed -e 's/noticed by rank [0-9]*//g' \
          -e 's/[0-9.][0-9.]* s\([^a-z]\|$\)/\1/g')
    echo "$msg" | grep -qi 'rank' || return 1
    for r in $(echo "$2" | tr ',' ' '); do
        echo "$msg" | grep -Eq "(^|[^0-9])$r([^0-9]|\$)" || return 1
    done
}

# rel_check_survivors VICTIMS [CALL [nocheck]]: every other rank failed a
# call (CALL: an extended regex, default any) and, unless "nocheck" is
# given, libddp's error on its stderr names every rank of VICTIMS.
rel_check_survivors () {
    local victims=$1 call=${2:-.*} names=${3:-check} r line ok
    for r in $(seq 0 $((REL_NTASKS - 1))); do
        case ",$victims," in *",$r,"*) continue ;; esac
        grep -Eq "^ddp_victim: rank $r: ($call) failed: " "$REL_DIR.out" || {
            say "rank $r did not report a failed call"; return 1; }
        [ "$names" = check ] || continue
        ok=0
        while IFS= read -r line; do
            rel_names "$line" "$victims" && { ok=1; break; }
        done <<EOF
$(grep -F "[ddp rank $r/$REL_NTASKS]" "$REL_DIR.err")
EOF
        [ $ok = 1 ] || { say "no libddp error of rank $r names rank(s) $victims"; return 1; }
    done
}

# rel_check_clean: no process of the run (2 s grace for the step daemons),
# nothing new on the nodes, no socket or temporary file in the run directory.
rel_check_clean () {
    local i=0 procs job
    while procs=$(rel_run_procs "$REL_DIR") && [ -n "$procs" ] && [ $i -lt 20 ]; do
        sleep 0.1; i=$((i + 1))
    done
    [ -z "$procs" ] || { say "processes left:"; echo "$procs"; return 1; }
    rel_snapshot >"$REL_DIR.after"
    diff "$REL_DIR.before" "$REL_DIR.after" | sed -n 's/^> //p' >"$REL_DIR.new"
    # Entries that disappeared are not leftovers, nor those of other jobs
    # running meanwhile (make -j check, other users of the machine): Open
    # MPI's segments in the shared /dev/shm, Slurm's PMIx directories of
    # other job ids.  Everything else that appeared is ours.
    job=$(cat "$REL_DIR"/pid.* 2>/dev/null | awk '$3 != "-" { print $3; exit }')
    grep -Ev -e ':/dev/shm/vader_segment\.' \
         -e ':/tmp/spmix_appdir_[0-9]+_[0-9]+\.[0-9]+(/|$)' "$REL_DIR.new" \
         >"$REL_DIR.left" || true
    grep -E ":/tmp/spmix_appdir_[0-9]+_${job:-none}\.[0-9]+(/|\$)" \
         "$REL_DIR.new" >>"$REL_DIR.left" || true
    if [ -s "$REL_DIR.left" ]; then
        say "left on the nodes:"; cat "$REL_DIR.left"; return 1
    fi
    [ ! -s "$REL_DIR.new" ] || { say "new on the nodes, from other jobs:"; cat "$REL_DIR.new"; }
    # ddp_victim's own records (pid.R, exit.R) are written through .NAME.R.tmp
    # and a rename; a rank SIGKILLed by Slurm between the two (ddp_abort's
    # PMIx_Abort cancels the step) leaves the temporary file.  That is the
    # test program's file, not libddp's.
    find "$REL_DIR" -mindepth 1 ! -name 'pid.*' ! -name 'exit.*' \
         ! -name '.pid.[0-9]*.tmp' ! -name '.exit.[0-9]*.tmp' >"$REL_DIR.extra"
    [ ! -s "$REL_DIR.extra" ] || { say "left in the run directory:"; cat "$REL_DIR.extra"; return 1; }
}

# rel_judge VICTIMS [CALL [nocheck]]: the verdict on a run whose VICTIMS
# were killed: wait for the step and log its output, then check that it
# ended in time, that every other rank failed CALL (naming VICTIMS unless
# "nocheck", as rel_check_survivors), and that nothing was left.
rel_judge () {
    rel_wait && rel_show && rel_check_bound &&
    rel_check_survivors "$@" && rel_check_clean
}

# rel_kill_run NAME MODE VICTIM DELAY CALL [nocheck] [SRUN ARGS...]: the
# kill -9 scenario: ddp_victim MODE in run directory NAME, under srun with
# SRUN ARGS (default -N2 -n4), rank VICTIM killed DELAY seconds after it is
# ready, then rel_judge VICTIM CALL [nocheck].
rel_kill_run () {
    local name=$1 mode=$2 victim=$3 delay=$4 call=$5 check=
    shift 5
    if [ "${1:-}" = nocheck ]; then check=nocheck; shift; fi
    [ $# -gt 0 ] || set -- -N2 -n4
    rel_start "$name" "$mode" "$victim" "$@" &&
    rel_kill "$victim" "$delay" &&
    rel_judge "$victim" "$call" $check
}

# rel_victim I RANK...: the I-th victim (from 1) of a rotation over RANKS.
rel_victim () {
    local i=$1
    shift
    shift $(( (i - 1) % $# ))
    echo "$1"
}

# rel_kill_tests N MODE DELAY CALL WHAT RANK...: N tests (DDP_STRESS=N
# overrides) named "WHAT, kill -9 rank V (run I of N)", each a
# rel_kill_run of MODE with the next victim V of a rotation over RANKS.
rel_kill_tests () {
    local n mode=$2 delay=$3 call=$4 what=$5 i v
    n=$(rel_repeats "$1")
    shift 5
    for i in $(seq 1 "$n"); do
        v=$(rel_victim "$i" "$@")
        test_expect_success "$what, kill -9 rank $v (run $i of $n)" "
            rel_kill_run $mode.$i $mode $v $delay $call
        "
    done
}

# rel_worst_time: the longest failed call of the run (exit.R), for the log.
rel_worst_time () {
    cat "$REL_DIR"/exit.* 2>/dev/null | awk '$3 + 0 > m { m = $3 + 0 } END { print m + 0 }'
}

# rel_check_call_time RANKS MIN MAX: each rank of RANKS (comma-separated)
# failed a call that took between MIN and MAX seconds (DIR/exit.RANK).
rel_check_call_time () {
    local r took
    for r in $(echo "$1" | tr ',' ' '); do
        took=$(awk '{ print $3 }' "$REL_DIR/exit.$r" 2>/dev/null)
        [ -n "$took" ] || { say "rank $r recorded no failed call"; return 1; }
        awk -v t="$took" -v lo="$2" -v hi="$3" 'BEGIN { exit !(t >= lo && t <= hi) }' || {
            say "rank $r: the failing call took ${took}s, expected ${2}..${3}s"; return 1; }
    done
}

#!/bin/bash
# gpu-slurm.sh - srun --ddp end to end on a GPU machine that has no Slurm.
#
#   gpu-slurm.sh pack BUILD OUT   (here, on Debian 12, with Slurm installed)
#       gather into OUT what the GPU machine lacks: Debian 12's Slurm 22.05
#       daemons, clients and plugins, PMIx 4.2.2, munge, ss, the shared
#       libraries they and BUILD's programs load (not glibc's, the
#       compiler's, CUDA's or NCCL's), BUILD's libddp, plugin and test
#       programs, and tests/cluster; about 31 MiB
#   gpu-slurm.sh run CARRY OUT    (there, as root; a throwaway machine)
#       install the carried Slurm at Debian's paths, start a two-node test
#       cluster (each slurmd in its own UTS and mount namespace; fake GPUs
#       in gres, index 0 being the real GPU 0) and run libddp through
#       srun --ddp=host and --ddp=nccl; every output and a summary go to OUT
#
# What it found on the device machine: doc/gpu/2026-11-26-h200-slurm.md.
# contrib/gpu-check.sh is the GPU check without Slurm.
set -u
cmd=${1:-}; shift || true
case $cmd in
pack)
[ $# = 2 ] || { echo "usage: gpu-slurm.sh pack BUILD OUT" >&2; exit 2; }
set -e
build=$(cd "$1" && pwd); src=$(cd "$(dirname "$0")/.." && pwd); out=$2
rm -rf "$out"; mkdir -p "$out"/{sbin,bin,lib,slurm-wlm,pmix2,ddp/lib,ddp/progs,ddp/spank,tests}
for b in slurmctld slurmd slurmstepd; do cp "$(readlink -f /usr/sbin/$b)" "$out/sbin/$b"; done
cp /usr/sbin/munged "$out/sbin/"
for b in srun sinfo scontrol squeue scancel ss; do cp /usr/bin/$b "$out/bin/"; done
cp -a /usr/lib/x86_64-linux-gnu/slurm-wlm/. "$out/slurm-wlm/"
cp -a /usr/lib/x86_64-linux-gnu/pmix2/. "$out/pmix2/"
cp -a "$build"/libjob/.libs/libddp.so* "$out/ddp/lib/"
cp "$build/spank/.libs/ddp.so" "$out/ddp/spank/"
for p in nccl_check nccl_bench ddp_check ddp_victim ddp_fault ddp-local-run nccl_probe pmix_ref; do
    [ -f "$build/tests/progs/$p" ] && cp "$build/tests/progs/$p" "$out/ddp/progs/"
done
[ -f "$build/contrib/examples/train" ] && cp "$build/contrib/examples/train" "$out/ddp/progs/" || true
cp -a "$src/tests/cluster" "$out/tests/"
# Libraries: every one ldd names, except glibc's, the compiler's, CUDA's and NCCL's.
{
    for f in "$out"/sbin/* "$out"/bin/* "$out"/slurm-wlm/*.so "$out"/ddp/lib/libddp.so.0 \
             "$out"/ddp/spank/ddp.so "$out"/ddp/progs/* $(find "$out/pmix2" -name '*.so*' -type f); do
        ldd "$f" 2>/dev/null | awk '$3 ~ /^\// { print $3 }'
    done
} | sort -u | grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libresolv|libcudart|libnccl|libstdc\+\+|libgcc_s|libcuda|libddp|libslurmfull)\.so' \
  | while read -r l; do cp -L "$l" "$out/lib/"; done
# libslurmfull lives in the plugin folder (the daemons' RUNPATH points there).
du -sh "$out"
cp "$0" "$out/gpu-slurm.sh"
;;
run)
[ $# = 2 ] || { echo "usage: gpu-slurm.sh run CARRY OUT" >&2; exit 2; }
carry=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
log () { echo "== $(date +%T) $*" | tee -a "$out/summary.txt"; }
run () { # run NAME TIMEOUT CMD...: record rc, stdout+stderr
    local name=$1 t=$2; shift 2
    local s=$(date +%s.%N)
    timeout "$t" "$@" >"$out/$name.out" 2>&1; local rc=$?
    log "$name: rc=$rc in $(echo "$(date +%s.%N) - $s" | awk '{printf "%.1f", $1 - $3}') s"
    tail -n 4 "$out/$name.out" | sed 's/^/   /' | tee -a "$out/summary.txt"
    return $rc
}
cp "$carry"/sbin/* /usr/sbin/ && cp "$carry"/bin/* /usr/bin/ || exit 1
mkdir -p /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib/x86_64-linux-gnu/pmix2
cp -a "$carry/slurm-wlm/." /usr/lib/x86_64-linux-gnu/slurm-wlm/
cp -a "$carry/pmix2/." /usr/lib/x86_64-linux-gnu/pmix2/
# Carried libraries the machine lacks only.
mkdir -p /opt/ddp-lib
for l in "$carry"/lib/*; do
    n=$(basename "$l")
    ldconfig -p | grep -q " $n " || cp "$l" /opt/ddp-lib/
done
log "carried libraries used: $(ls /opt/ddp-lib | tr '\n' ' ')"
nccl_dir=$(dirname "$(ldconfig -p | awk '/libnccl.so.2 /{print $NF; exit}')")
cudart_dir=$(dirname "$(ls /usr/local/cuda*/targets/x86_64-linux/lib/libcudart.so.13 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$carry/ddp/lib:/opt/ddp-lib:$nccl_dir:$cudart_dir
log "nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
log "slurmd: $(slurmd -V 2>&1)"
mkdir -p /sys/fs/cgroup/system.slice 2>/dev/null
export DDP_PLUGIN=$carry/ddp/spank/ddp.so DDP_CLUSTER_NO_SYSTEMD=1
export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
P=$carry/ddp/progs
cd /tmp
dir=$("$carry/tests/cluster/ddp-test-cluster" start --nodes 2 2>"$out/cluster-start.err")
if [ -z "$dir" ]; then log "cluster did not start"; cat "$out/cluster-start.err" | tail -40 | tee -a "$out/summary.txt"; exit 1; fi
eval "$("$carry/tests/cluster/ddp-test-cluster" env "$dir")"
log "cluster $dir up"
run env-N2n4 30 srun --ddp=host -N2 -n4 sh -c 'echo $(hostname) RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES PMIX_GDS_MODULE=$PMIX_GDS_MODULE'
run pmix_ref-N2n4 40 srun --mpi=pmix -N2 -n4 "$P/pmix_ref"
run host-N2n4 60 srun --ddp=host -N2 -n4 "$P/ddp_check" -q
run host-N1n2 60 srun --ddp=host -N1 -n2 "$P/ddp_check" -q
run host-N2n3-nocollect 60 env DDP_PMIX_COLLECT=0 srun --ddp=host -N2 -n3 "$P/ddp_check" -q
run host-N2n4-gdshash 60 env PMIX_MCA_gds=hash srun --ddp=host -N2 -n4 "$P/ddp_check" -q
run nccl-N1n1 120 srun --ddp=nccl --gres=gpu:1 -N1 -n1 "$P/nccl_check" --quick
run nccl-N2n2 120 srun --ddp=nccl --gres=gpu:1 -N2 -n2 "$P/nccl_check" --quick
run nccl-N2n2-ddpcheck 120 env DDP_BACKEND=nccl srun --ddp=nccl --gres=gpu:1 -N2 -n2 "$P/ddp_check" -q
# A rank killed in a barrier loop: the survivor on the other node names it.
run nccl-kill-N2n2 60 env DDP_TIMEOUT=5 srun --ddp=nccl --gres=gpu:1 -N2 -n2 "$P/ddp_fault" kill 1 barrier
# The example's data and checkpoint in a folder every node sees (each test
# node has a private /tmp).
shared=$(mktemp -d /var/tmp/ddp-gpu-slurm.XXXXXX)
[ -x "$P/train" ] && run train-N2n2 120 srun --ddp=nccl --gres=gpu:1 -N2 -n2 "$P/train" \
    --data "$shared/train-data.bin" --checkpoint "$shared/train-checkpoint.bin"
rm -rf "$shared"
"$carry/tests/cluster/ddp-test-cluster" stop "$dir" >/dev/null 2>&1
log "done"
;;
*) echo "usage: gpu-slurm.sh pack BUILD OUT | run CARRY OUT" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Issue 16's 2-GPU strong scaling on the ~10M-cell wing, in one device call (~450 s):
# the wing meshed on 16 threads, its 2-part plan, then `bench-parallel` (one GPU against
# two, nccl and mpi-host, overlap on and off). Needs .whl with both bundles:
#   bash scripts/device_wheels.sh --gmsh --mpich
# then, with the `run` tool, kind nvidia-h200-x2, carry [".whl"]:
#   bash scripts/two_gpu_scaling.sh
# Writes parallel.json, parallel.md and the log to $OUT (or ./out/scaling).
set -uo pipefail
source scripts/device_env.sh || exit 1
out="${OUT:-out/scaling}"
mkdir -p "$out" /tmp/scaling
{
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
    python -m meshorder generate wing /tmp/scaling/w10M.msh --cells 10000000 --threads 16 \
        && python -m meshorder reorder /tmp/scaling/w10M.msh /tmp/scaling/p10M.npz \
               --partitions 2 \
        && mpiexec -n 2 python -m gpusolver bench-parallel --mesh /tmp/scaling/w10M.msh \
               --plan /tmp/scaling/p10M.npz --repeats 20 --json "$out/parallel.json" \
               --markdown "$out/parallel.md"
} 2>&1 | tee "$out/scaling.log"

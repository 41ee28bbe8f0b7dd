#!/usr/bin/env bash
# Greedy against strided faces inside the parts, on two GPUs, in one device call (~7 min):
# the FV flow on a 2M-cell wing and modal DG p = 2 on a 0.98M-triangle square, each with
# `bench-parallel --faces greedy` and `--faces strided` (the whole mesh's plan made at
# start with the same face order), then the parts' GPU tests. Needs .whl with both bundles:
#   bash scripts/device_wheels.sh --gmsh --mpich
# then, with the `run` tool, kind nvidia-h200-x2 or nvidia-h100-x2, carry [".whl"]:
#   bash scripts/part_faces_two_gpus.sh
# Each piece writes its JSON, markdown and log to $OUT (or ./out/part_faces) as it ends.
set -uo pipefail
source scripts/device_env.sh || exit 1
out="${OUT:-out/part_faces}"
work=/tmp/part_faces
mkdir -p "$out" "$work"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$out/device.txt"
timeout 60 python -m meshorder generate wing "$work/w2M.msh" --cells 2000000 --threads 16 \
    > "$out/generate.log" 2>&1
timeout 40 python -m meshorder generate couette "$work/sq.msh" --cells 1000000 --kind tri \
    >> "$out/generate.log" 2>&1
for faces in greedy strided; do
    timeout 100 mpiexec -n 2 python -m gpusolver bench-parallel --mesh "$work/w2M.msh" \
        --faces "$faces" --transports nccl --repeats 20 --json "$out/fv_$faces.json" \
        --markdown "$out/fv_$faces.md" > "$out/fv_$faces.log" 2>&1
done
for faces in strided greedy; do
    timeout 100 mpiexec -n 2 python -m gpusolver bench-parallel --solver dg --degree 2 \
        --mesh "$work/sq.msh" --faces "$faces" --transports nccl --check-steps 5 \
        --json "$out/dg_$faces.json" --markdown "$out/dg_$faces.md" > "$out/dg_$faces.log" 2>&1
done
timeout 120 python -m pytest -q -m gpu -p no:cacheprovider tests/gpusolver/test_fv_partitioned.py \
    tests/gpusolver/test_dg_partitioned.py > "$out/gpu_tests.log" 2>&1
echo done >> "$out/device.txt"

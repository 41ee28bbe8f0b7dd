#!/bin/bash
# The 8.7M-cell M6 (136k cells refined twice): one GPU (one part) against two (nccl), LU-SGS + multigrid.
rm -rf .whl && cp -r .carry/x5 .whl && source scripts/device_env.sh
mkdir -p /tmp/r && tar xJf .whl/r2.tar.xz -C /tmp/r
T0=$(date +%s)
python3 - <<'PY'
import tomllib, pathlib
src = tomllib.loads(pathlib.Path("cases/oneram6_euler.toml").read_text())
def w(path, out, n):
    t = f'''[mesh]
file = "/tmp/r/m.msh"
plan = "/tmp/r/m2.npz"
refine = 2
[physics]
mach = 0.8395
aoa_deg = 3.06
reference_area = 0.7532
[boundaries]
wing = "slip-wall"
symmetry = "symmetry"
farfield = "farfield"
[scheme]
flux = "jst"
[run]
backend = "cupy"
transport = "nccl"
time_integrator = "lusgs"
sweeps = "colours"
multigrid = 3
cfl = 50
cfl_max = 1e4
iterations = {n}
residual_reduction = 1e-12
[output]
directory = "{out}"
checkpoint_every = 100000
'''
    pathlib.Path(path).write_text(t)
w("/tmp/c.toml", "/tmp/o", 400)
PY
echo "== 1 GPU run" ; python3 -m gpusolver run /tmp/c.toml --quiet 2>&1 | tail -3 | tee -a $OUT/log.txt
cp /tmp/o/history.csv $OUT/h1.csv; rm -rf /tmp/o
echo "== 2 GPU run" | tee -a $OUT/log.txt; mpiexec -n 2 python3 -m gpusolver run /tmp/c.toml --quiet 2>&1 | tail -3 | tee -a $OUT/log.txt
cp /tmp/o/history.csv $OUT/h2.csv; rm -rf /tmp/o
echo "elapsed $(( $(date +%s) - T0 ))" | tee -a $OUT/log.txt
echo "== 1 GPU steps profile" | tee -a $OUT/log.txt; python3 scripts/profile_setup.py /tmp/c.toml --steps 2>&1 | tail -40 | tee -a $OUT/log.txt
echo "== 2 GPU steps profile" | tee -a $OUT/log.txt; mpiexec -n 2 python3 scripts/profile_setup.py /tmp/c.toml --steps --output /tmp/p2 2>&1 | tail -80 | tee -a $OUT/log.txt
echo "elapsed $(( $(date +%s) - T0 ))" | tee -a $OUT/log.txt
cd $OUT && ls

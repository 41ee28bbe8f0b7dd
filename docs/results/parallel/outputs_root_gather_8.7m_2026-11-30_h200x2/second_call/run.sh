#!/bin/bash
# Outputs of a run on two GPUs: every rank gathering the whole state (old) against the root alone and pieces from each rank's own cells (new).
rm -rf .whl && cp -r .carry/x5 .whl && source scripts/device_env.sh
NEW=$PYTHONPATH
OLD=${PYTHONPATH/$PWD\/packages\/gpusolver\/src/$PWD\/.dev\/old\/packages\/gpusolver\/src}
mkdir -p /tmp/r && tar xJf .whl/r2.tar.xz -C /tmp/r
L=$OUT/log.txt; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $L
python3 - <<'PY'
import pathlib
pathlib.Path("/tmp/c.toml").write_text('''[mesh]
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
iterations = 3000
residual_reduction = 1e-6
[output]
directory = "/tmp/o"
checkpoint_every = 100000
''')
PY
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/gpusolver/test_fv_partitioned.py tests/gpusolver/test_dg_partitioned.py -m gpu 2>&1 | tail -3 | tee -a $L
for v in new old; do
  if [ $v = new ]; then export PYTHONPATH=$NEW; else export PYTHONPATH=$OLD; fi
  t=$(date +%s.%N)
  mpiexec -n 2 python3 .dev/rss.py run /tmp/c.toml --quiet > $OUT/run_$v.log 2>&1
  echo "== $v rc=$? whole $(python3 -c "import time;print(round(time.time()-$t,1))") s; $(grep -h 'peak RSS' $OUT/run_$v.log | tr '\n' ' ')" | tee -a $L
  tail -1 /tmp/o/history.csv | cut -d, -f1,3,4,9,10 | tee -a $L
  ls -la /tmp/o | awk '{print $5, $9}' | tr '\n' ' ' >> $L; echo >> $L
  rm -rf /tmp/o
done
for v in new; do
  if [ $v = new ]; then export PYTHONPATH=$NEW; else export PYTHONPATH=$OLD; fi
  echo "== profile $v" | tee -a $L
  mpiexec -n 2 python3 scripts/profile_setup.py /tmp/c.toml --output /tmp/p_$v > $OUT/profile_$v.log 2>&1
  grep -i "snapshot\|checkpoint\|write_\|gather\|whole\|advance\|build_system" $OUT/profile_$v.log | tee -a $L
done
echo "elapsed $(( $(date +%s) - T0 ))" | tee -a $L
cd $OUT && cp log.txt log.log && tar czf all.tgz *.log; ls

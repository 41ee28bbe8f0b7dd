#!/bin/bash
# ONERA M6 refined on its facets against on its true surface, against meshes generated at the fine sizes.
rm -rf .whl && cp -r .carry/s .whl && source scripts/device_env.sh
mkdir -p /tmp/r && tar xJf .whl/r2.tar.xz -C /tmp/r
T0=$(date +%s)
L=$OUT/log.txt
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $L
( python3 -m meshorder generate oneram6 /tmp/g8.msh --cells 8700000 --far 20 --threads 12 > $OUT/gen8.log 2>&1; echo "gen8 done $(( $(date +%s) - T0 ))" >> $L ) &
GEN=$!
case_file() {  # name mesh plan refine surface
python3 - "$@" <<'PY'
import sys, pathlib
name, mesh, plan, refine, surface = sys.argv[1:6]
s = f'surface = "{surface}"\n' if surface != "-" else ""
pathlib.Path(f"/tmp/{name}.toml").write_text(f'''[mesh]
file = "{mesh}"
plan = "{plan}"
refine = {refine}
{s}[physics]
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
time_integrator = "lusgs"
sweeps = "colours"
multigrid = 3
cfl = 50
cfl_max = 1e4
iterations = 3000
residual_reduction = 1e-6
[output]
directory = "/tmp/o_{name}"
checkpoint_every = 100000
''')
PY
}
run_case() {
  local name=$1; shift
  case_file $name "$@"
  local t=$(date +%s.%N)
  python3 -m gpusolver run /tmp/$name.toml --quiet > $OUT/$name.log 2>&1
  echo "== $name rc=$? whole $(python3 -c "import time;print(round(time.time()-$t,1))") s" | tee -a $L
  tail -4 $OUT/$name.log | tee -a $L
  cp /tmp/o_$name/history.csv $OUT/${name}_history.csv; grep total /tmp/o_$name/forces.csv | tee -a $L
  tail -1 /tmp/o_$name/history.csv | cut -d, -f1,3,4,9,10 | tee -a $L
  rm -rf /tmp/o_$name
}
run_case r1_facets /tmp/r/m.msh /tmp/r/m2.npz 1 -
run_case r1_surface /tmp/r/m.msh /tmp/r/m2.npz 1 oneram6
run_case r2_facets /tmp/r/m.msh /tmp/r/m2.npz 2 -
run_case r2_surface /tmp/r/m.msh /tmp/r/m2.npz 2 oneram6
python3 -m meshorder generate oneram6 /tmp/g1.msh --cells 1100000 --far 20 --threads 4 > $OUT/gen1.log 2>&1
python3 -m meshorder reorder /tmp/g1.msh /tmp/g1.npz --sweep-colours --multigrid 3 > $OUT/re1.log 2>&1
run_case g1 /tmp/g1.msh /tmp/g1.npz 0 -
echo "t $(( $(date +%s) - T0 ))" | tee -a $L
wait $GEN
python3 -m meshorder reorder /tmp/g8.msh /tmp/g8.npz --sweep-colours --multigrid 3 > $OUT/re8.log 2>&1
echo "reorder8 done $(( $(date +%s) - T0 ))" | tee -a $L
run_case g8 /tmp/g8.msh /tmp/g8.npz 0 -
echo "elapsed $(( $(date +%s) - T0 ))" | tee -a $L

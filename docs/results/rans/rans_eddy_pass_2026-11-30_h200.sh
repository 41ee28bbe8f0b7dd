#!/bin/bash
# SST's eddy viscosity from the fused LU-SGS step's own gradients: GPU tests, bench old/new, SST/SA/laminar steps old/new.
rm -rf .whl && cp -r .carry/g .whl && source scripts/device_env.sh
NEW=$PYTHONPATH
OLD=${PYTHONPATH/$PWD\/packages\/gpusolver\/src/$PWD\/.dev\/old\/packages\/gpusolver\/src}
mkdir -p ../shared/meshes/tmr/flatplate/grids && cp .dev/tmr/* ../shared/meshes/tmr/flatplate/grids/
L=$OUT/log.txt; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $L
python3 -m meshorder generate oneram6 /tmp/m.msh --cells 1000000 --prism-layers 40 --threads 16 2>&1 | tr '\r' '\n' | tail -1 | tee -a $L
(python3 -m meshorder reorder /tmp/m.msh /tmp/m.npz --sweep-colours --multigrid 2 > $OUT/reorder.log 2>&1; echo "reorder done $(( $(date +%s) - T0 ))" >> $L) &
RE=$!
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/gpusolver/test_turbulence.py -k cupy 2>&1 | tail -4 | tee -a $L
echo "tests done $(( $(date +%s) - T0 ))" | tee -a $L
wait $RE
for vi in new_1 old_1 new_2; do v=${vi%_*}; i=${vi#*_}
  if [ $v = new ]; then export PYTHONPATH=$NEW; else export PYTHONPATH=$OLD; fi
  python3 -m gpusolver bench --mesh /tmp/m.msh --orderings rcm --strategies atomic --precisions fp64,fp32 --residual-orderings rcm --json $OUT/bench_${v}_$i.json --markdown $OUT/bench_${v}_$i.md > $OUT/bench_${v}_$i.log 2>&1
  echo "== bench $v $i rc=$? t=$(( $(date +%s) - T0 ))" | tee -a $L
  grep -h -i "sst\|sa_\|ns_res" $OUT/bench_${v}_$i.log | head -5 >> $L
done
for model in sst none; do
python3 - $model <<'PY'
import sys, pathlib, re
model = sys.argv[1]
t = pathlib.Path("cases/oneram6_sa.toml").read_text()
t = t.replace('"../out/oneram6_prisms.msh"', '"/tmp/m.msh"').replace('"../out/oneram6_prisms.npz"', '"/tmp/m.npz"')
t = re.sub(r'turbulence = "sa-neg"', f'turbulence = "{model}"', t)
t = re.sub(r"iterations = \d+", "iterations = 300", t).replace('backend = "auto"', 'backend = "cupy"')
t = re.sub(r'directory = ".*"', f'directory = "/tmp/o_{model}"', t)
pathlib.Path(f"/tmp/{model}.toml").write_text(t)
PY
done
for run in sst_new_1 sst_old_1 none_new_1; do IFS=_ read model v i <<< "$run"
  if [ $v = new ]; then export PYTHONPATH=$NEW; else export PYTHONPATH=$OLD; fi
  python3 -m gpusolver run /tmp/$model.toml --quiet > $OUT/run_${model}_${v}_$i.log 2>&1
  echo "== run $model $v $i rc=$? $(python3 -c "
import csv; r=list(csv.DictReader(open('/tmp/o_$model/history.csv')))
a,b=r[99],r[-1]; print('steps', b['iteration'], 'ms/step(100..end)', round(1e3*(float(b['wall_s'])-float(a['wall_s']))/(int(b['iteration'])-int(a['iteration'])),3), 'cl', b['cl'], 'res0', b['residual_0'])")" | tee -a $L
  cp /tmp/o_$model/history.csv $OUT/hist_${model}_${v}_$i.csv 2>/dev/null; rm -rf /tmp/o_$model
done
echo "elapsed $(( $(date +%s) - T0 ))" | tee -a $L
cd $OUT && tar czf all.tgz *.log *.csv *.json *.md 2>/dev/null; ls

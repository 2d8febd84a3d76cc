#!/usr/bin/env bash
# Device call 1 (issues 30, 29): the 4,096-piece two-stage model through torch.compile, eqsat and Inductor
# alone, inference and training step; beside them the GPU cost model on the zoo (calzoo).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TQDM_DISABLE=1
S0=$(date +%s); nproc; nvidia-smi -L; mkdir -p /tmp/r
t() { echo "$1 rc=$2 at $(( $(date +%s) - S0 )) s" | tee -a /tmp/r/times.txt; }
sc() { tag=$1; lim=$2; shift 2; timeout $lim python3 -m bench.scripts.pipeline_scale --dynamo --device cuda "$@" > /tmp/r/scale_$tag.txt 2>&1; t scale_$tag $?; }
sc e 80 --pieces 4096                        # eqsat inference, alone on the host
sc et ${T1:-220} --pieces 4096 --train &
sc i ${T1:-220} --pieces 4096 --inductor-alone &
sc it ${T1:-220} --pieces 4096 --train --inductor-alone &
sc it256 ${T1:-220} --pieces 256 1024 --train --inductor-alone &
(timeout ${T1:-220} python3 -m bench.scripts.calibrate --zoo --device cuda > /tmp/r/calzoo.txt 2>&1; t calzoo $?) &
wait
for f in /tmp/r/scale_*.txt; do echo "== $f"; grep -a "^|" $f | tail -3; grep -a -i "error" $f | tail -3; done
echo "== calzoo"; grep -a -v -i warn /tmp/r/calzoo.txt | tail -40
cp /tmp/r/*.txt $OUT/ 2>/dev/null; ls $OUT

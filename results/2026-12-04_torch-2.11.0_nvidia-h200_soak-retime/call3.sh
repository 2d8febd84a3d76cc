#!/usr/bin/env bash
# scratch: re-check the soak findings on torch 2.11 + the freezing cause (parallel), then the warm start (quiet)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site_tf4 .whl_tf4/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TQDM_DISABLE=1
mkdir -p /tmp/r; S0=$(date +%s)
timeout 120 python3 -m bench.scripts.soak --seeds 2000607t,2000888,2001079t,2001519t,2001760,2001823t,2001982,2002268,2002394,2003233t,2000792,2002447t,2001807t --workers 10 --summary $OUT/recheck_cpu.json > /tmp/r/recheck_cpu.txt 2>&1 &
timeout 120 python3 -m bench.scripts.soak --seeds 1001189t,2002268,2002447t --workers 3 --device cuda --inductor --summary $OUT/recheck_gpu.json > /tmp/r/recheck_gpu.txt 2>&1 &
timeout 60 python3 docs/upstream/inductor_stack_slot_reuse.py cuda > /tmp/r/stack_slot_reuse_cuda.txt 2>&1 &
PYTHONPATH=/tmp/site_tf4:/tmp/site:$PWD timeout 120 python3 -m bench.scripts.freezing_guard_check --device cuda > /tmp/r/freezing_guard_check_cuda_tf4524.txt 2>&1 &
timeout 120 python3 -m bench.scripts.pipeline_scale --dynamo --pieces 4096 --device cuda > /tmp/r/pipeline_scale_4096_cuda.txt 2>&1 &
wait
echo "phase A $(( $(date +%s) - S0 )) s"; grep -a "seed\|^soak" /tmp/r/recheck_*.txt | cut -c1-400
for f in stack_slot_reuse_cuda freezing_guard_check_cuda_tf4524 pipeline_scale_4096_cuda; do echo "== $f"; grep -v "warn\|Warn" /tmp/r/$f.txt | tail -12 | cut -c1-300; done
timeout 190 python3 -m bench.scripts.warm_start --device cuda --models llama recsys_tower --warm-runs 2 > /tmp/r/warm.txt 2>&1; grep -v "warn" /tmp/r/warm.txt | tail -12
echo "warm $(( $(date +%s) - S0 )) s"
cp /tmp/r/*.txt $OUT/

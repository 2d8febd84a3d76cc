#!/usr/bin/env bash
# scratch: diagnostics (parallel) then quiet timing (sequential)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TQDM_DISABLE=1
mkdir -p /tmp/tr /tmp/fz /tmp/r
S0=$(date +%s)
one() { s=$1; shift; TORCH_TRACE=/tmp/tr/$s timeout 150 python3 -m bench.scripts.soak --workers 1 --case-timeout 140 "$@" > /tmp/tr/$s.txt 2>&1; }
for s in 2000792 2000888 2001760 2001982 2002268 2002394 2003174; do one $s --cases 1 --seed $s & done
for s in 2000607 2001079 2001519 2001823 2003233 2001807 2002447; do one $s --cases 2 --seed $((s-1)) & done
for s in 1001189 1001533; do one $s --cases 2 --seed $((s-1)) --device cuda --inductor & done
timeout 160 python3 -m bench.scripts.freezing_check --device cuda --model bart --dump /tmp/fz > /tmp/fz/log.txt 2>&1 &
timeout 170 python3 -m bench.scripts.calibrate --device cuda --zoo --kernels --only t5,bart,bert > /tmp/r/calib_kernels.txt 2>&1 &
wait
echo "phase A $(( $(date +%s) - S0 )) s"
for s in /tmp/tr/*.txt; do echo "== $s"; grep -a "^soak:" $s | cut -c1-250; done
cat /tmp/fz/log.txt | grep -v Warn | tail -25
tail -5 /tmp/r/calib_kernels.txt
timeout 130 python3 -m bench.scripts.warm_start --device cuda --models llama recsys_tower > /tmp/r/warm.txt 2>&1; tail -25 /tmp/r/warm.txt
echo "warm done $(( $(date +%s) - S0 )) s"
z() { timeout ${2} python3 -m bench zoo --device cuda --size small --rounds 5 --modes inductor,eqsat --out /tmp/zoo_$1 --models "${@:3}" > /tmp/r/zoo_$1.txt 2>&1; python3 -m bench report /tmp/zoo_$1 > /dev/null 2>&1; cp /tmp/zoo_$1/results.jsonl /tmp/r/zoo_$1.jsonl; }
z llama 90 llama --settings train,cudagraphs
z resnet 60 resnet18 --settings infer,cudagraphs
z recsys 60 recsys_tower --settings cudagraphs,infer
z bert 50 bert --settings train
echo "zoo done $(( $(date +%s) - S0 )) s"
for f in /tmp/r/zoo_*.jsonl; do python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l); print(r["model"], r.get("setting"), r["mode"], r.get("status"), r.get("kernels_total"), r.get("latency_ms"), r.get("latency_ms_runs"), r.get("compile_s"))' $f; done
tar czf $OUT/call2.tgz -C /tmp tr fz r

#!/usr/bin/env bash
# scratch: the whole zoo in 7 parallel processes (compiles are CPU-bound; 16 cores); timing takes turns
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TQDM_DISABLE=1 BENCH_DEVICE_LOCK=/tmp/gpu.lock
T=${T:-460}
run() { g=$1; shift; timeout $T python3 -m bench zoo --device cuda --size small --rounds 3 --out /tmp/zoo/$g "$@" > /tmp/zoo/log_$g.txt 2>&1;
        python3 -m bench report /tmp/zoo/$g > /dev/null 2>> /tmp/zoo/log_$g.txt; }
mkdir -p /tmp/zoo
run a1 --models llama,gpt2 &
run a2 --models mixtral,qwen2 &
run b1 --models t5,phi3 &
run b2 --models bart,bert &
run c1 --models interformer,vit,dlrm &
run c2 --models dhen,recsys_tower,resnet18,wukong &
run d --models split_cat_two_stage,ten_unequal_linears --modes inductor,inductor_optimus,eqsat &
wait
cd /tmp/zoo && cat */results.jsonl > $OUT/zoo.jsonl; tar czf $OUT/zoo.tgz .
for g in a1 a2 b1 b2 c1 c2 d; do echo "== $g"; tail -2 log_$g.txt | cut -c1-300; sed -n '/^## Geomean/,/^## Inference (infer)/p' $g/report.md; done

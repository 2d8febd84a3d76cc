#!/usr/bin/env bash
# scratch: the issue-28 soaks on the device host: GPU through Inductor and CPU side by side, until T seconds
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TQDM_DISABLE=1
T=${T:-520}; GSEED=${GSEED:-1000000}; CSEED=${CSEED:-2000000}
nproc; nvidia-smi -L
timeout -s TERM $T python3 -m bench.scripts.soak --device cuda --inductor --cases ${GCASES:-2000} --seed $GSEED \
   --workers ${GW:-7} --case-timeout 120 --summary $OUT/soak_gpu.json --out /tmp/soak_gpu.jsonl > /tmp/soak_gpu.txt 2>&1 &
timeout -s TERM $T python3 -m bench.scripts.soak --device cpu --cases ${CCASES:-10000} --seed $CSEED \
   --workers ${CW:-8} --case-timeout 120 --summary $OUT/soak_cpu.json --out /tmp/soak_cpu.jsonl > /tmp/soak_cpu.txt 2>&1 &
wait
gzip -c /tmp/soak_gpu.jsonl > $OUT/soak_gpu.jsonl.gz; gzip -c /tmp/soak_cpu.jsonl > $OUT/soak_cpu.jsonl.gz
tail -c 3000 /tmp/soak_gpu.txt; echo; tail -c 3000 /tmp/soak_cpu.txt
cp /tmp/soak_gpu.txt /tmp/soak_cpu.txt $OUT/

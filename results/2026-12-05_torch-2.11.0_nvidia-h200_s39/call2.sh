#!/usr/bin/env bash
# Device call 2 (issue 32): warm starts of recsys_tower, alone on the host.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TQDM_DISABLE=1
timeout ${T_WARM:-200} python3 -m bench.scripts.warm_start --device cuda --models recsys_tower --warm-runs 2 > $OUT/warm.txt 2>&1
echo "warm rc=$?"; grep -a -v -i warn $OUT/warm.txt | tail -30

#!/usr/bin/env bash
# Device call 3 (issue 28): BART under freezing with batch_linear_lhs off (the 6.05 of 2026-12-04) with the
# stack-slot workaround on; the GPU soak's four findings again after their fixes; on the host's torch 2.11
# CPU, the seeds its 2026-12-04 CPU soak charged to eqsat (2002268 among them), with the fixes since; the float16
# tie-mask reproducer and the CUDA tests of its workaround. Side by side.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TQDM_DISABLE=1
T=${T:-85}
(timeout $T python3 -m bench.scripts.freezing_check --device cuda --model bart --only-disabled batch_linear_lhs > $OUT/freeze_bart.txt 2>&1; echo "freeze rc=$?") &
(timeout $T python3 -m bench.scripts.soak --device cuda --inductor --seeds 4000053t,4001911t,4001067t,4001539t --workers 4 \
   --case-timeout 90 --summary $OUT/soak_gpu_seeds.json > $OUT/soak_gpu_seeds.txt 2>&1; echo "gpu seeds rc=$?") &
(timeout $T python3 -m bench.scripts.soak --seeds 2000607t,2000792,2000888,2001079t,2001519t,2001760,2001807t,2001823t,2001982,2002268,2002394,2002447t,2003233t,2003174 \
   --workers 6 --case-timeout 90 --summary $OUT/soak_cpu211_seeds.json > $OUT/soak_cpu211_seeds.txt 2>&1; echo "cpu 2.11 seeds rc=$?") &
(timeout $T python3 docs/upstream/inductor_lowp_tie_mask.py cuda > $OUT/lowp_tie_mask.txt 2>&1; echo "reproducer rc=$?"
 timeout 60 python3 -m pytest -q -p no:cacheprovider tests/fx_bridge/test_inductor_workarounds.py > $OUT/pytest_workarounds.txt 2>&1; echo "pytest rc=$?") &
wait
grep -a -v -i warn $OUT/lowp_tie_mask.txt | tail -8; tail -3 $OUT/pytest_workarounds.txt
grep -a -v -i warn $OUT/freeze_bart.txt | tail -5
for f in $OUT/soak_*seeds.txt; do echo "== $f"; grep -a "^  seed \|^soak:" $f | cut -c1-400; done

#!/usr/bin/env bash
# The GPU figures the issues ask for, in as few device calls as possible.
#   bash bench/scripts/h200_session.sh JOB...    (JOB: calibrate | calibrate_train | bench | dynamic | hf | hf_frozen | train | ddp |
#                                          scale | wide | layout | soak | mend | parity | dump |
#                                          freezecheck | profile | zoo | warm | calzoo | scaletrain | retime | cands)
# Run from the repo root on the GPU machine with the cp312 wheels in ${WHEELS:-.whl}/ (egglog 13.2.0 and
# what it imports at start that the image lacks; add transformers 4.52.4, tokenizers 0.21 and
# huggingface-hub 0.36 for the transformer blocks, and leave libcst out if the call's 64 MiB is tight).
# egglog's wheel is 48.6 MB because its extension carries debug info; `strip --strip-unneeded` on
# egglog/bindings*.so (219 MB -> 11 MB), RECORD's hashes redone, rezipped: 5.2 MB, which leaves room for the tree.
# Results land in $OUT (default bench/out/h200): the harness' folder bench/ and one jobs.txt with every job's output (the device returns at most 8 files).
set -u
out=${OUT:-bench/out/h200}
mkdir -p "$out"
. bench/scripts/device_env.sh || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L
models=${MODELS:-dhen,wukong,interformer,dlrm,recsys_tower,split_cat_64,split_cat_mixed,split_stack_unbind,illustrative}
words() { echo "${1//,/ }"; }  # the env vars list names with commas; `python -m bench` takes them apart
for job in "$@"; do
  echo "== $job"
  case $job in
    calibrate) timeout "${T_CAL:-200}" python3 -m bench.scripts.calibrate --device cuda --graphs "${GRAPHS:-30}" --models \
                 > /tmp/job.txt 2>&1 ;;
    # #15: the Aten forward and backward graphs of a training step, input and eqsat-optimized: predicted vs measured
    calibrate_train) timeout "${T_CALT:-240}" python3 -m bench.scripts.calibrate --device cuda --train --models --graphs 0 \
                       --only "${CAL_MODELS:-wukong,dhen,interformer,bert_layer,gpt2_block}" > /tmp/job.txt 2>&1 ;;
    bench) timeout "${T_BENCH:-400}" python3 -m bench run --device cuda --size small --models $(words "$models") \
             --modes $(words "${MODES:-eager,inductor,inductor_optimus,eqsat_greedy,eqsat}") ${TRAIN:---train} --rounds "${ROUNDS:-3}" \
             --out "$out/bench" > /tmp/job.txt 2>&1
           python3 -m bench report "$out/bench" >> /tmp/job.txt 2>&1   # also after a timeout: rows stream
           cat "$out/bench/report.md" >> /tmp/job.txt ;;
    # issue #13: static and symbolic-batch rows side by side (MODE+dyn), inference and training, then
    # optimizer time symbolic vs static on the same graphs
    dynamic) timeout "${T_DYN:-420}" python3 -m bench run --device cuda --size small \
               --models $(words "${DYN_MODELS:-dhen,interformer,recsys_tower,split_cat_64}") \
               --modes $(words "${DYN_MODES:-eager,inductor,eqsat}") --train --dynamic --out "$out/dynamic" > /tmp/job.txt 2>&1
             python3 -m bench report "$out/dynamic" >> /tmp/job.txt 2>&1
             cat "$out/dynamic/report.md" >> /tmp/job.txt
             timeout "${T_DYNOPT:-150}" python3 -m bench.scripts.dynamic_overhead --device cuda --repeat 5 >> /tmp/job.txt 2>&1 ;;
    # the six transformer blocks (needs transformers 4.52.4) for Inductor / Inductor+Optimus / eqsat: job hf is
    # inference and training, hf_frozen inference with Inductor's freezing (every mode); the modes of a model
    # are timed in 5 interleaved rounds (latency_ms_runs: the noise). HF_TAG=b names a second run. Each
    # run's folder stays in /tmp; $out gets hf[_frozen]$HF_TAG.jsonl (every row) and .md (report.md)
    hf|hf_frozen)
        run="$job${HF_TAG:-}"
        timeout "${T_HF:-540}" python3 -m bench run --device cuda --size "${HF_SIZE:-small}" \
          --models $(words "${HF_MODELS:-gpt2_block,bert_layer,t5_block,llama,bart,vit}") \
          --modes $(words "${HF_MODES:-inductor,inductor_optimus,eqsat}") --rounds "${HF_ROUNDS:-5}" \
          $([ $job = hf_frozen ] && echo --freezing --no-train || echo --train) --out "/tmp/$run" > /tmp/job.txt 2>&1
        python3 -m bench report "/tmp/$run" >> /tmp/job.txt 2>&1   # also after a timeout: rows stream
        cp "/tmp/$run/results.jsonl" "$out/$run.jsonl"; cp "/tmp/$run/report.md" "$out/$run.md"
        python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); runs = r.get("latency_ms_runs") or [0]
    print(r["model"], r["phase"], r["mode"], r.get("status"), "launches", r.get("kernels_total"), "ms", runs,
          "noise %.1f%%" % (100 * (max(runs) - min(runs)) / max(min(runs), 1e-9)))' \
          "/tmp/$run/results.jsonl" >> /tmp/job.txt
        cat "/tmp/$run/report.md" >> /tmp/job.txt ;;
    # issue 29: the zoo of whole models (transformers, timm/torchvision, ours) for Inductor and eqsat under every
    # setting: inference, training step, freezing, CUDA graphs; modes timed in interleaved rounds. The whole zoo at
    # size small is ~20 min of compiles, so a call runs one third (ZOO_GROUP, ~6-7 min each on the H200):
    # a = the decoders (GQA, MoE) and split-cat programs, b = encoders and encoder-decoders, c = vision and recsys.
    # Model after model, rows stream: a timeout keeps every setting of the models it finished. $out gets
    # zoo_GROUP.jsonl (every row; `python -m bench report DIR` redraws the plots from DIR/results.jsonl),
    # zoo_GROUP.md (report.md) and zoo_GROUP_speedup.png
    zoo) group=${ZOO_GROUP:-a}
         case $group in
           a) zoo_models=gpt2,llama,qwen2,mixtral,split_cat_two_stage,ten_unequal_linears ;;
           b) zoo_models=bert,t5,bart,phi3 ;;
           c) zoo_models=vit,resnet18,dhen,wukong,interformer,dlrm,recsys_tower ;;
         esac
         TQDM_DISABLE=1 timeout "${T_ZOO:-450}" python3 -m bench zoo --device cuda --size "${ZOO_SIZE:-small}" \
           --models $(words "${ZOO_MODELS:-$zoo_models}") --rounds "${ZOO_ROUNDS:-3}" --out "/tmp/zoo_$group" > /tmp/job.txt 2>&1
         python3 -m bench report "/tmp/zoo_$group" > /dev/null 2>> /tmp/job.txt   # also after a timeout: rows stream
         cp "/tmp/zoo_$group/results.jsonl" "$out/zoo_$group.jsonl"; cp "/tmp/zoo_$group/report.md" "$out/zoo_$group.md"
         cp "/tmp/zoo_$group/speedup_vs_inductor.png" "$out/zoo_${group}_speedup.png"
         sed -n '/^## Geomean/,/^## Inference (infer)/p' "/tmp/zoo_$group/report.md" >> /tmp/job.txt ;;   # + worse rows
    # issue 32: a second process compiling the same model (cache hit) against the first and Inductor's warm compile
    warm) timeout "${T_WARM:-300}" python3 -m bench.scripts.warm_start --device cuda --models ${WARM_MODELS:-recsys_tower} \
            --warm-runs 2 > /tmp/job.txt 2>&1 ;;
    # issue 29: the GPU cost model's predicted launches against Inductor's for the zoo's input and chosen programs
    calzoo) timeout "${T_CALZOO:-400}" python3 -m bench.scripts.calibrate --zoo --device cuda --kernels > /tmp/job.txt 2>&1 ;;
    # issue 30: the 4,096-piece two-stage model's training step through torch.compile, launches counted
    scaletrain) timeout "${T_SCALET:-200}" python3 -m bench.scripts.pipeline_scale --dynamo --pieces 4096 --train \
                  --device cuda > /tmp/job.txt 2>&1 ;;
    # issue 29: rows a parallel zoo run flagged, timed alone (one process, more rounds)
    retime) TQDM_DISABLE=1 timeout "${T_RETIME:-300}" python3 -m bench zoo --device cuda --size small --rounds "${ZOO_ROUNDS:-5}" \
              --modes inductor eqsat --models $(words "${RETIME_MODELS:-wukong,dlrm}") --settings $(words "${RETIME_SETTINGS:-frozen}") \
              --out /tmp/retime > /tmp/job.txt 2>&1
            python3 -m bench report /tmp/retime > /dev/null 2>> /tmp/job.txt
            cp /tmp/retime/results.jsonl "$out/retime.jsonl"; cat /tmp/retime/report.md >> /tmp/job.txt ;;
    train) timeout "${T_TRAIN:-200}" python3 -m bench.scripts.train_step --device cuda --size small \
             --models dhen wukong interformer dlrm recsys_tower > /tmp/job.txt 2>&1 ;;
    ddp) timeout "${T_DDP:-200}" torchrun --nproc_per_node 2 -m bench.scripts.ddp_bench --models dlrm recsys_tower \
           --size small > /tmp/job.txt 2>&1 ;;
    # issue 29: what Inductor decided among on the zoo's Dynamo graphs, every program between measured
    # (--share 1), with the default GPU model and with the one that misprices stacked pointwise ops
    cands) : > /tmp/job.txt
           for extra in "" --mispriced; do
             timeout "${T_CANDS:-300}" python3 -m bench.scripts.verify_candidates --device cuda --share 1 $extra \
               --models "${CAND_MODELS:-llama,mixtral,t5,bart}" >> /tmp/job.txt 2>&1
           done ;;
    scale) timeout "${T_SCALE:-120}" python3 -m bench.scripts.pipeline_scale --nodes 1000 5000 > /tmp/job.txt 2>&1 ;;
    # #14: the wide recsys model (256 sparse features at medium, a tower each; thousands of kernels in
    # training): Inductor alone vs eqsat vs Inductor+Optimus, inference and training; rows stream.
    # WIDE_FLAGS='--train --no-infer' WIDE_MODES=inductor_optimus: one row that did not fit a call
    wide) timeout "${T_WIDE:-300}" python3 -m bench run --device cuda --size "${WIDE_SIZE:-medium}" --models wide_recsys \
            --modes "${WIDE_MODES:-inductor,eqsat,inductor_optimus}" ${WIDE_FLAGS:---train} --out "$out/wide" > /tmp/job.txt 2>&1
          python3 -m bench report "$out/wide" >> /tmp/job.txt 2>&1
          cat "$out/wide/report.md" >> /tmp/job.txt ;;
    layout) timeout "${T_LAYOUT:-120}" python3 -m bench.scripts.layout_check --device cuda > /tmp/job.txt 2>&1 ;;
    soak) timeout "${T_SOAK:-480}" python3 -m bench.scripts.soak --cases "${CASES:-10000}" --workers "${WORKERS:-15}" --stall 60 \
            --out "$out/soak.jsonl" --summary "$out/soak.json" > /tmp/job.txt 2>&1 ;;
    # graph-break mender, cold start and steady state original vs mended (needs transformers 4.52.4)
    mend) timeout "${T_MEND:-540}" python3 -m bench.scripts.mend_coldstart --device cuda --iters 30 \
            --models "${MEND_MODELS:-grounding-dino,plbart-fp16,vision-encoder-decoder,speech-encoder-decoder}" \
            > /tmp/job.txt 2>&1 ;;
    # issue 18's programs (bench/models/parity.py) and dlrm: Inductor / Optimus / eqsat, inference and training
    parity) timeout "${T_PARITY:-420}" python3 -m bench run --device cuda --size small \
              --models "${PARITY_MODELS:-$(python3 -c 'from bench.models import REGISTRY; print(",".join(n for n in REGISTRY if n.startswith("parity_")))'),dlrm,split_stack_unbind}" \
              --modes inductor,inductor_optimus,eqsat --train --rounds "${ROUNDS:-3}" --out "$out/parity" > /tmp/job.txt 2>&1
            python3 -m bench report "$out/parity" >> /tmp/job.txt 2>&1
            cat "$out/parity/report.md" >> /tmp/job.txt ;;
    # which rewrite makes a model wrong under freezing
    freezecheck) timeout "${T_FREEZE:-150}" python3 -m bench.scripts.freezing_check --device cuda --model "${FREEZE_MODEL:-bart}" \
                   > /tmp/job.txt 2>&1 ;;
    # the launch lines behind a count that differs between modes
    # (DUMP_FLAGS: --train, --freezing, --modes ...; every wrapper's code goes to $out/code.txt)
    dump) timeout "${T_DUMP:-200}" python3 -m bench.scripts.kernel_dump --device cuda --models ${DUMP_MODELS:-split_stack_unbind} \
            ${DUMP_FLAGS:-} --code "$out/code.txt" > /tmp/job.txt 2>&1 ;;
    # a latency that differs between modes: host enqueue vs GPU kernel time, interleaved rounds
    # (PROFILE_FLAGS: --train, --freezing, --size, --modes ...)
    profile) timeout "${T_PROF:-300}" python3 -m bench.scripts.profile_step --device cuda \
               --models ${PROFILE_MODELS:-llama} ${PROFILE_FLAGS:-} > /tmp/job.txt 2>&1 ;;
  esac
  { echo "== $job"; grep -v -i warn /tmp/job.txt | tail -"${TAIL:-80}"; } | tee -a "$out/jobs.txt"
done

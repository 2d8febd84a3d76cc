"""Inductor computes a valid Torch-IR graph wrongly (torch 2.13 CPU; the H200 run of torch 2.11 gave
the whole model a max error of 6.2): ``module.py`` is the first 194 nodes of the Dynamo graph of a
2-layer BART (transformers 4.52.4, config ``bench.models.hf_blocks`` at size small) as eqsat rewrote
it with its distinct-operand guard lifted: one ``baddbmm`` over ``stack([ln_dec, ln_enc, ln_enc,
ln_enc])`` computes the decoder's cross-attention query and the encoder's second-layer q, k and v.
Run eagerly it equals the original model's graph (max error 2e-7); ``torch.compile`` (Inductor alone,
default options) of this graph differs from its eager run by ~0.75 on random inputs. Its output is
``fc1(layer_norm(...))`` of the encoder's second layer; the same graph returning the layer norm
itself compiles right. eqsat stacks each operand of a batched matmul once
(``eqsat_rules.batch.BatchRule.distinct``), so it never emits this program.

    python docs/upstream/inductor_stacked_repeat/run.py
"""
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from inductor_stacked_repeat.module import Graph  # noqa: E402


def inputs():
    torch.manual_seed(0)
    spec = json.loads((pathlib.Path(__file__).parent / "inputs.json").read_text())
    return [torch.randint(0, 100, shape) if dtype == "int64" else 0.1 * torch.randn(shape, dtype=getattr(torch, dtype))
            for shape, dtype in spec]


def main() -> float:
    torch._inductor.config.force_disable_caches = True
    graph, args = Graph(), inputs()
    with torch.no_grad():
        want = graph(*args)[0]
        got = torch.compile(graph)(*args)[0]
    err = (want - got).abs().max().item()
    print(f"torch {torch.__version__}: max |eager - inductor| = {err:.3g}")
    return err


if __name__ == "__main__":
    main()

"""The stock configurations of issue 42 as harness modes: combo kernels, with Optimus, and both with
CUDA graphs (``MODE_cg``)."""
import torch

from bench.modes import CG_MODES, MODES, compile_model, inductor_patches
from bench.inductor_metrics import optimus_options


def test_combo_modes_compile_with_combo_kernels_and_only_their_optimus_with_optimus():
    assert {"inductor_combo", "inductor_combo_optimus"} <= set(MODES)
    assert {"inductor_combo_cg", "inductor_combo_optimus_cg"} <= set(CG_MODES)
    assert inductor_patches("inductor") == {} and inductor_patches("inductor_optimus") == {}
    assert inductor_patches("inductor_combo") == {"combo_kernels": True}
    pre, post = optimus_options()
    assert inductor_patches("inductor_combo_optimus") == {"combo_kernels": True, "pre_grad_fusion_options": pre,
                                                           "post_grad_fusion_options": post}


def test_a_combo_mode_hands_its_patches_to_compile_fx(monkeypatch):
    from eqsat_torch.inductor import compat

    seen = []

    def fake_compile_fx(gm, example_inputs, config_patches=None):
        seen.append(config_patches)
        return gm.forward

    monkeypatch.setattr(compat, "compile_fx", lambda: fake_compile_fx)
    torch._dynamo.reset()
    compiled = compile_model("inductor_combo", torch.nn.Linear(4, 4))
    compiled.fn(torch.randn(2, 4))
    assert seen == [{"combo_kernels": True}]
    torch._dynamo.reset()


"""Full models from current libraries, built from configs (no download): the workload a user compiles.

transformers models are whole (embeddings, every layer, final norm) and return their last hidden
state, so the harness compares one tensor per model and sums it into the training loss. Attention is
SDPA, the default a transformers 5.x user gets (``attn_implementation`` set explicitly so both
versions agree), except where the installed version has no SDPA path (``_attention``). Vision models
come from timm or torchvision when they import, else from transformers. Every builder is
``build(size, device, dtype) -> (module, inputs)``; ``module.source`` names what was built.
"""

from __future__ import annotations

import functools
import importlib

import torch
from torch import nn

from bench.models.hf_blocks import LastHidden
from bench.models.sizes import finish, pick, randn, seeded

VOCAB = 1024
BATCH = 2


def _dims(size: str | int) -> tuple[int, int, int]:
    """(hidden width, layers, tokens); an int sets the width (2 layers, 128 tokens)."""
    width = pick(size, tiny=32, small=256, medium=512, large=1024)
    if isinstance(size, int):
        return width, 2, 128
    return width, pick(size, tiny=1, small=2, medium=4, large=8), pick(size, tiny=8, small=128, medium=256, large=512)


def _heads(width: int) -> int:
    return max(2, width // 64)


def _swiglu(width: int) -> int:
    """Llama's gated-MLP width, 8/3 of the hidden width rounded up to a multiple of 64."""
    return 64 * -(-8 * width // (3 * 64))


def _optional(name: str):
    """The module, or None where it is missing or does not import (a torchvision built for another
    torch raises at import, and timm imports torchvision)."""
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return None


def _transformers():
    transformers = _optional("transformers")
    if transformers is None:
        raise ModuleNotFoundError("transformers is not installed: pip install transformers", name="transformers")
    return transformers


def _attention(model_cls) -> str:
    """SDPA where the class has a path for it, else eager: transformers 4.52's T5 has none (its
    relative position bias goes into the scores), 5.x's has. Asking 4.52 for SDPA there raises."""
    return "sdpa" if getattr(model_cls, "_supports_sdpa", False) else "eager"


def _gpt2(width, layers, seq):
    return dict(n_embd=width, n_layer=layers, n_head=_heads(width), n_positions=2 * seq)


def _bert(width, layers, seq):
    return dict(hidden_size=width, num_hidden_layers=layers, num_attention_heads=_heads(width),
                intermediate_size=4 * width, max_position_embeddings=2 * seq)


def _t5(width, layers, seq):
    return dict(d_model=width, d_kv=width // _heads(width), d_ff=4 * width, num_layers=layers, num_heads=_heads(width))


def _bart(width, layers, seq):
    heads = _heads(width)
    return dict(d_model=width, encoder_layers=layers, decoder_layers=layers, encoder_attention_heads=heads,
                decoder_attention_heads=heads, encoder_ffn_dim=4 * width, decoder_ffn_dim=4 * width,
                max_position_embeddings=2 * seq)


def _decoder(width, layers, seq, grouped: bool = False, **extra):
    """Llama-family keys (Llama, Qwen2, Mixtral, Phi-3 share them); ``grouped``: half as many key/value
    heads as query heads (grouped-query attention)."""
    heads = _heads(width)
    return dict(hidden_size=width, intermediate_size=_swiglu(width), num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=heads // 2 if grouped else heads,
                max_position_embeddings=2 * seq, **extra)


def _gemma2(width, layers, seq):
    """Gemma-2: Llama's keys plus an explicit head width (its default is 256, whatever the hidden
    width), grouped-query attention, sliding-window layers alternating with global ones."""
    return _decoder(width, layers, seq, grouped=True, head_dim=width // _heads(width), sliding_window=seq // 2)


def _gpt_neox(width, layers, seq):
    return dict(hidden_size=width, num_hidden_layers=layers, num_attention_heads=_heads(width),
                intermediate_size=4 * width, max_position_embeddings=2 * seq)


def _opt(width, layers, seq):
    return dict(hidden_size=width, num_hidden_layers=layers, num_attention_heads=_heads(width), ffn_dim=4 * width,
                word_embed_proj_dim=width, max_position_embeddings=2 * seq)


def _qwen3_moe(width, layers, seq):
    """Qwen3-MoE: 8 experts, 2 per token, every layer sparse, experts a quarter of the dense width."""
    return _decoder(width, layers, seq, grouped=True, head_dim=width // _heads(width), num_experts=8,
                    num_experts_per_tok=2, moe_intermediate_size=_swiglu(width) // 4, decoder_sparse_step=1)


ENCODER_DECODER = ("input_ids", "decoder_input_ids")
# name: (transformers class prefix, config keys, input names)
ARCHS = {
    "gpt2": ("GPT2", _gpt2, ("input_ids",)),
    "bert": ("Bert", _bert, ("input_ids",)),
    "t5": ("T5", _t5, ENCODER_DECODER),
    "llama": ("Llama", _decoder, ("input_ids",)),
    "qwen2": ("Qwen2", functools.partial(_decoder, grouped=True), ("input_ids",)),
    "mixtral": ("Mixtral", functools.partial(_decoder, grouped=True, num_local_experts=8, num_experts_per_tok=2),
                ("input_ids",)),
    "phi3": ("Phi3", _decoder, ("input_ids",)),
    "bart": ("Bart", _bart, ENCODER_DECODER),
    "gemma2": ("Gemma2", _gemma2, ("input_ids",)),
    "gpt_neox": ("GPTNeoX", _gpt_neox, ("input_ids",)),
    "opt": ("OPT", _opt, ("input_ids",)),
    "qwen3_moe": ("Qwen3Moe", _qwen3_moe, ("input_ids",)),
}
# BERT's pooler is off the path to last_hidden_state: its weights would get no gradient
MODEL_KWARGS = {"bert": {"add_pooling_layer": False}}


def build_transformer(arch: str, size: str | int = "small", device="cpu", dtype=torch.float32):
    """``ARCHS[arch]`` as a whole transformers model with random weights, on random token ids."""
    transformers = _transformers()
    prefix, keys, input_names = ARCHS[arch]
    gen = seeded(30 + list(ARCHS).index(arch))
    width, layers, seq = _dims(size)
    config_keys = keys(width, layers, seq)
    model_cls = getattr(transformers, prefix + "Model")
    # special token ids inside the small vocabulary, so no config warns about its default ids
    cfg = getattr(transformers, prefix + "Config")(
        **config_keys, vocab_size=VOCAB, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        use_cache=False, attn_implementation=_attention(model_cls))
    model = LastHidden(model_cls(cfg, **MODEL_KWARGS.get(arch, {})), *input_names)
    model.source = f"transformers {transformers.__version__} {model_cls.__name__}, attention {cfg._attn_implementation}"
    if "num_local_experts" in config_keys or "num_experts" in config_keys:  # 5.x runs the experts as grouped_mm by default, 4.52 loops over them
        model.source += f", experts {getattr(cfg, '_experts_implementation', None) or 'loop'}"
    ids = tuple(torch.randint(0, VOCAB, (BATCH, seq), generator=gen).to(device) for _ in input_names)
    return finish(model, ids, device, dtype)


class PixelModel(nn.Module):
    """A transformers vision model on pixel values, returning its last hidden state."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixels).last_hidden_state


def _image(size: str | int) -> int:
    return 32 if size == "tiny" else 224


def build_vit(size: str | int = "small", device="cpu", dtype=torch.float32):
    """ViT-Tiny (patch 16, width 192, 3 heads) with the size's depth: timm's ``vit_tiny_patch16_224``
    when timm imports, else transformers' ViTModel with the same shape."""
    gen = seeded(40)
    _, depth, _ = _dims(size)
    image = _image(size)
    timm = _optional("timm")
    if timm is not None:
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, depth=depth, img_size=image)
        model.source = f"timm {timm.__version__} vit_tiny_patch16_224, depth {depth}"
    else:
        transformers = _transformers()
        cfg = transformers.ViTConfig(hidden_size=192, num_hidden_layers=depth, num_attention_heads=3,
                                     intermediate_size=768, image_size=image, patch_size=16,
                                     attn_implementation="sdpa")
        model = PixelModel(transformers.ViTModel(cfg, add_pooling_layer=False))
        model.source = f"transformers {transformers.__version__} ViTModel (ViT-Tiny shape), depth {depth}"
    return finish(model, (randn(gen, BATCH, 3, image, image, device=device, dtype=dtype),), device, dtype)


def build_resnet18(size: str | int = "small", device="cpu", dtype=torch.float32):
    """ResNet-18: torchvision's when it imports, else timm's, else transformers' ResNetModel with
    ResNet-18's stages (basic blocks, 2-2-2-2)."""
    gen = seeded(41)
    image = _image(size)
    torchvision, timm = _optional("torchvision"), _optional("timm")
    if torchvision is not None:
        model = torchvision.models.resnet18(weights=None)
        model.source = f"torchvision {torchvision.__version__} resnet18"
    elif timm is not None:
        model = timm.create_model("resnet18", pretrained=False)
        model.source = f"timm {timm.__version__} resnet18"
    else:
        transformers = _transformers()
        cfg = transformers.ResNetConfig(embedding_size=64, hidden_sizes=[64, 128, 256, 512], depths=[2, 2, 2, 2],
                                        layer_type="basic")
        model = PixelModel(transformers.ResNetModel(cfg))
        model.source = f"transformers {transformers.__version__} ResNetModel (ResNet-18 stages)"
    return finish(model, (randn(gen, BATCH, 3, image, image, device=device, dtype=dtype),), device, dtype)


# timm's smallest of each family: (timm name, the stages kept for "tiny")
TIMM = {"convnext": "convnext_atto", "mobilenetv3": "mobilenetv3_small_100"}


def build_timm(name: str, size: str | int = "small", device="cpu", dtype=torch.float32):
    """A timm classifier with random weights (``TIMM``): ConvNeXt (depthwise 7×7 convs, LayerNorm,
    GELU MLPs) and MobileNetV3 (inverted residuals, squeeze-excite, hard-swish). timm only: no stand-in
    is built where it is missing (the run skips the model)."""
    timm = _optional("timm")
    if timm is None:
        raise ModuleNotFoundError(f"timm is not installed: pip install timm (zoo model {name!r})", name="timm")
    gen = seeded(42 + list(TIMM).index(name))
    image = _image(size)
    model = timm.create_model(TIMM[name], pretrained=False)
    model.source = f"timm {timm.__version__} {TIMM[name]}"
    return finish(model, (randn(gen, BATCH, 3, image, image, device=device, dtype=dtype),), device, dtype)


MODELS = {**{arch: functools.partial(build_transformer, arch) for arch in ARCHS},
          "vit": build_vit, "resnet18": build_resnet18,
          **{name: functools.partial(build_timm, name) for name in TIMM}}

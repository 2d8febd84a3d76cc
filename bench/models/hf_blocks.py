"""Transformer blocks from the `transformers` package, built from small configs (no weights downloaded).

They represent the non-recsys workload: the optimizer must not make ordinary blocks worse.
"""

from __future__ import annotations

import importlib.util

import torch
from torch import nn

from bench.models.sizes import finish, pick, randn, seeded

HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


class BlockStack(nn.Module):
    """Runs hidden states through HF blocks, keeping only the hidden-state output of each."""

    def __init__(self, blocks: list[nn.Module], needs_cache_position: bool = False):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.needs_cache_position = needs_cache_position

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        kwargs = {}
        if self.needs_cache_position:  # T5 attention derives the query length from it
            kwargs["cache_position"] = torch.arange(hidden.shape[1], device=hidden.device)
        for block in self.blocks:
            out = block(hidden, **kwargs)
            hidden = out[0] if isinstance(out, tuple) else out  # transformers 5.2x: the tensor alone
        return hidden


def _dims(size: str | int) -> tuple[int, int, int]:
    """(hidden width, layers, sequence length)."""
    width = pick(size, tiny=32, small=128, medium=256, large=768)
    layers = 1 if size == "tiny" else 2
    return width, layers, 8 if size == "tiny" else 64


def _require_transformers():
    if not HAVE_TRANSFORMERS:
        raise ModuleNotFoundError('transformers is not installed: pip install "transformers>=5.17,<6" (the hf extra)',
                                  name="transformers")


def _build(seed: int, make_blocks, size, device, dtype, needs_cache_position=False):
    _require_transformers()
    gen = seeded(seed)
    width, layers, seq = _dims(size)
    model = BlockStack(make_blocks(width, layers), needs_cache_position)
    return finish(model, (randn(gen, 2, seq, width, device=device, dtype=dtype),), device, dtype)


def build_gpt2(size: str | int = "small", device="cpu", dtype=torch.float32):
    def blocks(width, layers):
        from transformers import GPT2Config
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block

        cfg = GPT2Config(n_embd=width, n_head=4, n_layer=layers, resid_pdrop=0.0, attn_pdrop=0.0, embd_pdrop=0.0)
        cfg._attn_implementation = "eager"
        return [GPT2Block(cfg, layer_idx=i) for i in range(layers)]

    return _build(20, blocks, size, device, dtype)


def build_bert(size: str | int = "small", device="cpu", dtype=torch.float32):
    def blocks(width, layers):
        from transformers import BertConfig
        from transformers.models.bert.modeling_bert import BertLayer

        cfg = BertConfig(
            hidden_size=width, num_attention_heads=4, intermediate_size=4 * width,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        )
        cfg._attn_implementation = "eager"
        return [BertLayer(cfg) for _ in range(layers)]

    return _build(21, blocks, size, device, dtype)


def build_t5(size: str | int = "small", device="cpu", dtype=torch.float32):
    def blocks(width, layers):
        from transformers import T5Config
        from transformers.models.t5.modeling_t5 import T5Block

        cfg = T5Config(d_model=width, d_kv=width // 4, d_ff=4 * width, num_heads=4, dropout_rate=0.0)
        cfg._attn_implementation = "eager"
        # Every block owns its position bias: the stack passes no bias from block to block.
        return [T5Block(cfg, has_relative_attention_bias=True, layer_idx=i) for i in range(layers)]

    return _build(22, blocks, size, device, dtype, needs_cache_position=True)


class LastHidden(nn.Module):
    """A whole HF model called with keyword inputs, returning only ``last_hidden_state``."""

    def __init__(self, model: nn.Module, *input_names: str):
        super().__init__()
        self.model = model
        self.input_names = input_names

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.input_names, inputs)), use_cache=False).last_hidden_state


def _token_ids(gen: torch.Generator, vocab: int, seq: int, device) -> torch.Tensor:
    return torch.randint(0, vocab, (2, seq), generator=gen).to(device)


def build_llama(size: str | int = "small", device="cpu", dtype=torch.float32):
    """A Llama-style decoder (token embedding, RMSNorm, rotary embedding, grouped-query SDPA
    attention, SwiGLU MLP): q/k/v and gate/up are projections of one input."""
    _require_transformers()
    from transformers import LlamaConfig, LlamaModel

    gen = seeded(23)
    width, layers, seq = _dims(size)
    cfg = LlamaConfig(hidden_size=width, intermediate_size=2 * width, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
                      max_position_embeddings=2 * seq, use_cache=False, attention_dropout=0.0)
    cfg._attn_implementation = "sdpa"
    model = LastHidden(LlamaModel(cfg), "input_ids")
    return finish(model, (_token_ids(gen, cfg.vocab_size, seq, device),), device, dtype)


def build_bart(size: str | int = "small", device="cpu", dtype=torch.float32):
    """BART encoder-decoder: self-attention, causal decoder self-attention and cross-attention."""
    _require_transformers()
    from transformers import BartConfig, BartModel

    gen = seeded(24)
    width, layers, seq = _dims(size)
    cfg = BartConfig(d_model=width, encoder_layers=layers, decoder_layers=layers, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_ffn_dim=4 * width, decoder_ffn_dim=4 * width,
                     vocab_size=256, max_position_embeddings=2 * seq, dropout=0.0, attention_dropout=0.0,
                     activation_dropout=0.0, use_cache=False)
    cfg._attn_implementation = "eager"
    model = LastHidden(BartModel(cfg), "input_ids", "decoder_input_ids")
    inputs = (_token_ids(gen, cfg.vocab_size, seq, device), _token_ids(gen, cfg.vocab_size, seq, device))
    return finish(model, inputs, device, dtype)


class ViTEncoder(nn.Module):
    """ViT without its pooler: patch embedding (a strided conv), class token, encoder layers."""

    def __init__(self, cfg):
        super().__init__()
        from transformers import ViTModel

        self.vit = ViTModel(cfg, add_pooling_layer=False)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.vit(pixel_values=pixels).last_hidden_state


def build_vit(size: str | int = "small", device="cpu", dtype=torch.float32):
    _require_transformers()
    from transformers import ViTConfig

    gen = seeded(25)
    width, layers, seq = _dims(size)
    image = 16 if size == "tiny" else 32  # 4×4 patches: 16 or 64 tokens plus the class token
    cfg = ViTConfig(hidden_size=width, num_hidden_layers=layers, num_attention_heads=4,
                    intermediate_size=4 * width, image_size=image, patch_size=4,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    cfg._attn_implementation = "eager"
    model = ViTEncoder(cfg)
    return finish(model, (randn(gen, 2, 3, image, image, device=device, dtype=dtype),), device, dtype)

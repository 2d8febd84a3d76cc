"""Real code we did not write: transformers 5.x models (the `hf` extra) from tiny configs (no weights).

Each factory returns (model, example kwargs); the configs reach the breaking code paths the
GraphMend paper reports (legacy-cache logger warnings, the fp16 overflow guard, LongRoPE, the
Grounding-DINO and CLAP-fused paths). `GRAPHMEND` is the paper's evaluation set as far as
transformers ships it; `corpus_extra.EXTRA` adds other popular models that broke. On transformers 4.52.4
these configs broke 55 times in GraphMend's set; 5.x removed most of those breaks (legacy caches and
their logger warnings): tests/fx_bridge/mend/test_corpus.py pins what is left.
"""

from __future__ import annotations

import torch

SMALL = dict(vocab_size=99, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64)


def _ids(*shape, vocab=99):
    return torch.randint(3, vocab, shape, generator=torch.Generator().manual_seed(0))


def _randn(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def _seq2seq(model, src=8, tgt=5):
    return model.eval(), {"input_ids": _ids(1, src), "decoder_input_ids": _ids(1, tgt)}


def t5():
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(vocab_size=99, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                   decoder_start_token_id=0)
    return _seq2seq(T5ForConditionalGeneration(cfg))


def bart():
    from transformers import BartConfig, BartForConditionalGeneration

    return _seq2seq(BartForConditionalGeneration(BartConfig(**SMALL)))


def bart_fp16():
    model, inputs = bart()
    return model.half(), inputs


def marian():
    from transformers import MarianConfig, MarianMTModel

    return _seq2seq(MarianMTModel(MarianConfig(**SMALL, pad_token_id=0, decoder_start_token_id=0)))


def blenderbot():
    from transformers import BlenderbotConfig, BlenderbotForConditionalGeneration

    return _seq2seq(BlenderbotForConditionalGeneration(BlenderbotConfig(**SMALL)))


def pegasus():
    from transformers import PegasusConfig, PegasusForCausalLM

    return PegasusForCausalLM(PegasusConfig(**SMALL)).eval(), {"input_ids": _ids(1, 8)}


def biogpt():
    from transformers import BioGptConfig, BioGptForCausalLM

    cfg = BioGptConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=64)
    return BioGptForCausalLM(cfg).eval(), {"input_ids": _ids(1, 8)}


def whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    cfg = WhisperConfig(vocab_size=99, num_mel_bins=8, d_model=32, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, max_source_positions=16, max_target_positions=32,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    features = torch.randn(1, 8, 32, generator=torch.Generator().manual_seed(0))
    return WhisperForConditionalGeneration(cfg).eval(), {"input_features": features, "decoder_input_ids": _ids(1, 5)}


def layoutlmv3():
    from transformers import LayoutLMv3Config, LayoutLMv3Model

    cfg = LayoutLMv3Config(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=64, input_size=32, patch_size=16,
                           coordinate_size=6, shape_size=4)
    bbox = torch.tensor([[[1, 2, 3, 4]] * 8])
    return LayoutLMv3Model(cfg).eval(), {"input_ids": _ids(1, 8), "bbox": bbox}


def longformer():
    from transformers import LongformerConfig, LongformerModel

    cfg = LongformerConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=64, attention_window=8)
    return LongformerModel(cfg).eval(), {"input_ids": _ids(1, 20)}


def led():
    from transformers import LEDConfig, LEDForConditionalGeneration

    cfg = LEDConfig(**{k: v for k, v in SMALL.items() if k != "max_position_embeddings"}, attention_window=8,
                    max_encoder_position_embeddings=64, max_decoder_position_embeddings=64)
    return _seq2seq(LEDForConditionalGeneration(cfg), src=20)


def phi3_longrope():
    from transformers import Phi3Config, Phi3ForCausalLM

    factors = [1.0, 1.5, 2.0, 2.5]  # head_dim 8 -> 4 frequencies
    cfg = Phi3Config(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=4, intermediate_size=64, max_position_embeddings=64,
                     original_max_position_embeddings=32, pad_token_id=0,
                     rope_scaling={"type": "longrope", "long_factor": factors, "short_factor": factors})
    return Phi3ForCausalLM(cfg).eval(), {"input_ids": _ids(1, 8)}


def grounding_dino():
    from transformers import BertConfig, GroundingDinoConfig, GroundingDinoModel, SwinConfig

    backbone = SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[1, 1], window_size=2,
                          out_features=["stage1", "stage2"])
    text = BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                      max_position_embeddings=64)
    cfg = GroundingDinoConfig(backbone_config=backbone, text_config=text, d_model=32, encoder_layers=1,
                              decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                              encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=4, num_feature_levels=2,
                              use_timm_backbone=False)
    return GroundingDinoModel(cfg).eval(), {"pixel_values": _randn(1, 3, 32, 32), "input_ids": _ids(1, 8)}


def clap_fused():
    from transformers import ClapAudioConfig, ClapConfig, ClapModel, ClapTextConfig

    text = ClapTextConfig(vocab_size=99, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=64)
    audio = ClapAudioConfig(enable_fusion=True, hidden_size=128, patch_embeds_hidden_size=16, depths=[1, 1, 1, 1],
                            num_attention_heads=[1, 1, 2, 2], projection_hidden_size=32)  # fusion: the breaking path
    cfg = ClapConfig(text_config=text.to_dict(), audio_config=audio.to_dict(), projection_dim=16)
    return ClapModel(cfg).eval(), {"input_ids": _ids(1, 8), "attention_mask": torch.ones(1, 8, dtype=torch.long),
                                   "input_features": _randn(1, 4, 1001, 64),
                                   "is_longer": torch.ones(1, 1, dtype=torch.bool)}


GRAPHMEND = {
    "t5": t5, "bart": bart, "bart-fp16": bart_fp16, "marian": marian, "blenderbot": blenderbot,
    "pegasus": pegasus, "biogpt": biogpt, "whisper": whisper, "layoutlmv3": layoutlmv3,
    "longformer": longformer, "phi3-longrope": phi3_longrope, "grounding-dino": grounding_dino,
    "clap-fused": clap_fused,
}


def models() -> dict:
    """Every corpus model: GraphMend's set, then the extra one."""
    from bench.mend_corpus.corpus_extra import EXTRA

    return {**GRAPHMEND, "led": led, **EXTRA}


def build(name: str):
    """(model, kwargs) with a fixed seed, so every build of a model has the same weights."""
    torch.manual_seed(0)
    return models()[name]()

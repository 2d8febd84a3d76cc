"""The larger corpus: popular transformers models outside GraphMend's set that broke under
torch.compile on transformers 4.52.4 (encoder-decoders, mixture-of-experts, vision-language, speech
and music), from tiny random-init configs, built with 5.x. Same contract as `corpus`: a factory
returns (model, kwargs).
"""

from __future__ import annotations

from bench.mend_corpus.corpus import SMALL, _ids, _randn, _seq2seq


def _t5_family(config_cls, model_cls, **extra):
    cfg = config_cls(vocab_size=99, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                     decoder_start_token_id=0, **extra)
    return _seq2seq(model_cls(cfg))


def m2m100():
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    return _seq2seq(M2M100ForConditionalGeneration(M2M100Config(**SMALL)))


def mbart():
    from transformers import MBartConfig, MBartForConditionalGeneration

    return _seq2seq(MBartForConditionalGeneration(MBartConfig(**SMALL)))


def plbart_fp16():
    from transformers import PLBartConfig, PLBartForConditionalGeneration

    model, inputs = _seq2seq(PLBartForConditionalGeneration(PLBartConfig(**SMALL)))
    return model.half(), inputs  # fp16 reaches the overflow guard


def blenderbot_small():
    from transformers import BlenderbotSmallConfig, BlenderbotSmallForConditionalGeneration

    return _seq2seq(BlenderbotSmallForConditionalGeneration(BlenderbotSmallConfig(**SMALL)))


def bigbird_pegasus():
    from transformers import BigBirdPegasusConfig, BigBirdPegasusForConditionalGeneration

    cfg = BigBirdPegasusConfig(**SMALL, attention_type="original_full")
    return _seq2seq(BigBirdPegasusForConditionalGeneration(cfg))


def mt5():
    from transformers import MT5Config, MT5ForConditionalGeneration

    return _t5_family(MT5Config, MT5ForConditionalGeneration)


def umt5():
    from transformers import UMT5Config, UMT5ForConditionalGeneration

    return _t5_family(UMT5Config, UMT5ForConditionalGeneration)


def longt5():
    from transformers import LongT5Config, LongT5ForConditionalGeneration

    return _t5_family(LongT5Config, LongT5ForConditionalGeneration, local_radius=4, encoder_attention_type="local")


def switch_transformers():
    from transformers import SwitchTransformersConfig, SwitchTransformersForConditionalGeneration

    return _t5_family(SwitchTransformersConfig, SwitchTransformersForConditionalGeneration, num_experts=4,
                      encoder_sparse_step=1, decoder_sparse_step=1)


def mixtral():
    from transformers import MixtralConfig, MixtralForCausalLM

    cfg = MixtralConfig(vocab_size=99, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=64)
    return MixtralForCausalLM(cfg).eval(), {"input_ids": _ids(1, 8)}


def qwen2_moe():
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    cfg = Qwen2MoeConfig(vocab_size=99, hidden_size=32, intermediate_size=64, moe_intermediate_size=32,
                         shared_expert_intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, max_position_embeddings=64)
    return Qwen2MoeForCausalLM(cfg).eval(), {"input_ids": _ids(1, 8)}


def reformer():
    from transformers import ReformerConfig, ReformerModel

    cfg = ReformerConfig(vocab_size=99, hidden_size=32, num_attention_heads=2, attention_head_size=16,
                         feed_forward_size=64, axial_pos_embds=False, max_position_embeddings=64,
                         attn_layers=["lsh", "local"], lsh_attn_chunk_length=4, local_attn_chunk_length=4,
                         num_buckets=2, is_decoder=False, hash_seed=0)  # seeded LSH: outputs are comparable
    return ReformerModel(cfg).eval(), {"input_ids": _ids(1, 16)}


def vision_encoder_decoder():
    from transformers import BartConfig, VisionEncoderDecoderConfig, VisionEncoderDecoderModel, ViTConfig

    encoder = ViTConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                        image_size=32, patch_size=8)
    decoder = BartConfig(**SMALL, is_decoder=True, add_cross_attention=True)
    cfg = VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    return VisionEncoderDecoderModel(cfg).eval(), {"pixel_values": _randn(1, 3, 32, 32), "decoder_input_ids": _ids(1, 5)}


def blip2():
    from transformers import Blip2Config, Blip2ForConditionalGeneration, OPTConfig

    text = OPTConfig(vocab_size=99, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, ffn_dim=64,
                     max_position_embeddings=64, word_embed_proj_dim=32)
    cfg = Blip2Config(vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, image_size=32, patch_size=8),
                      qformer_config=dict(vocab_size=99, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                          intermediate_size=64, encoder_hidden_size=32),
                      text_config=text.to_dict(), num_query_tokens=4)
    return Blip2ForConditionalGeneration(cfg).eval(), {"input_ids": _ids(1, 8), "pixel_values": _randn(1, 3, 32, 32)}


def speech_encoder_decoder():
    from transformers import BartConfig, SpeechEncoderDecoderConfig, SpeechEncoderDecoderModel, Wav2Vec2Config

    encoder = Wav2Vec2Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                             conv_dim=(16, 16), conv_stride=(4, 4), conv_kernel=(8, 8), num_conv_pos_embeddings=16,
                             num_conv_pos_embedding_groups=2)
    decoder = BartConfig(**SMALL, is_decoder=True, add_cross_attention=True)
    cfg = SpeechEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    return SpeechEncoderDecoderModel(cfg).eval(), {"input_values": _randn(1, 800), "decoder_input_ids": _ids(1, 5)}


def pop2piano():
    from transformers import Pop2PianoConfig, Pop2PianoForConditionalGeneration

    cfg = Pop2PianoConfig(vocab_size=99, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4)
    return Pop2PianoForConditionalGeneration(cfg).eval(), {"input_features": _randn(1, 6, 32),
                                                           "decoder_input_ids": _ids(1, 5)}


def musicgen():
    from transformers import MusicgenDecoderConfig, MusicgenForCausalLM

    cfg = MusicgenDecoderConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                                num_codebooks=2, max_position_embeddings=64)
    return MusicgenForCausalLM(cfg).eval(), {"input_ids": _ids(2, 8)}


EXTRA = {
    "m2m100": m2m100, "mbart": mbart, "plbart-fp16": plbart_fp16, "blenderbot-small": blenderbot_small,
    "bigbird-pegasus": bigbird_pegasus, "mt5": mt5, "umt5": umt5, "longt5": longt5,
    "switch-transformers": switch_transformers, "mixtral": mixtral, "qwen2-moe": qwen2_moe, "reformer": reformer,
    "vision-encoder-decoder": vision_encoder_decoder, "blip2": blip2, "speech-encoder-decoder": speech_encoder_decoder,
    "pop2piano": pop2piano, "musicgen": musicgen,
}

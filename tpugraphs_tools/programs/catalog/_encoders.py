"""Text encoders, encoder-decoders and speech models from keras-hub.

Encoders carry their text-classifier task (pooled output -> 2 logits: the fine-tuning step
most of them are used for); encoder-decoders their seq2seq LM (next-token loss on the decoder);
models without a task in keras-hub are trained against an MSE target on their features.
``base`` sizes are the published base models named per entry; ``tiny`` keeps the structure at
width 32 and 2 layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpugraphs_tools.programs.catalog._entry import (
    TEXT_DIMS,
    CatalogEntry,
    Dims,
    InputSpecs,
    scaled,
    seq2seq_inputs,
    text_inputs,
)

SEGMENTS = text_inputs("token_ids", "segment_ids", "padding_mask")
TINY_VOCAB, SMALL_VOCAB = 256, 32000


def _bert_like(layers: int, heads: int, d: int, ffn: int, vocab: int, **extra: Any) -> dict:
    return {"vocabulary_size": vocab, "num_layers": layers, "num_heads": heads,
            "hidden_dim": d, "intermediate_dim": ffn, **extra}


def _encoder(name: str, backbone: str, base: dict, small: dict, tiny: dict, source: str,
             inputs=SEGMENTS, classifier: bool = True, **extra: Any) -> CatalogEntry:
    prefix = backbone.removesuffix("Backbone")
    task: dict[str, Any] = {"task": f"{prefix}TextClassifier",
                            "task_kwargs": {"num_classes": 2},
                            "target": "classes"} if classifier else {}
    return CatalogEntry(
        name=name, backbone=backbone, family="encoder",
        sizes={"tiny": scaled(base, **tiny), "small": scaled(base, **small), "base": base},
        inputs=inputs, dims=TEXT_DIMS, source=source, **task, **extra)


BERT_BASE = _bert_like(12, 12, 768, 3072, 30522)
BERT_SMALL = _bert_like(4, 8, 512, 2048, SMALL_VOCAB)
BERT_TINY = _bert_like(2, 2, 32, 64, TINY_VOCAB)
PLAIN = text_inputs()

ENCODERS = [
    _encoder("bert", "BertBackbone", BERT_BASE, BERT_SMALL, BERT_TINY,
             "google-bert/bert-base-uncased config.json"),
    _encoder("roberta", "RobertaBackbone", {**BERT_BASE, "vocabulary_size": 50265},
             BERT_SMALL, BERT_TINY, "FacebookAI/roberta-base config.json", inputs=PLAIN),
    _encoder("xlm_roberta", "XLMRobertaBackbone", {**BERT_BASE, "vocabulary_size": 250002},
             BERT_SMALL, BERT_TINY, "FacebookAI/xlm-roberta-base config.json", inputs=PLAIN),
    _encoder("distil_bert", "DistilBertBackbone", {**BERT_BASE, "num_layers": 6},
             BERT_SMALL, BERT_TINY, "distilbert/distilbert-base-uncased config.json",
             inputs=PLAIN),
    _encoder("albert", "AlbertBackbone",
             {**_bert_like(12, 12, 768, 3072, 30000), "embedding_dim": 128},
             {**BERT_SMALL, "embedding_dim": 128}, {**BERT_TINY, "embedding_dim": 16},
             "albert/albert-base-v2 config.json (factorised 128-wide embedding, one shared "
             "layer group)"),
    _encoder("electra", "ElectraBackbone",
             {"vocab_size": 30522, "num_layers": 12, "num_heads": 12, "hidden_dim": 768,
              "embedding_dim": 768, "intermediate_dim": 3072},
             {"vocab_size": SMALL_VOCAB, "num_layers": 4, "num_heads": 8, "hidden_dim": 512,
              "embedding_dim": 512, "intermediate_dim": 2048},
             {"vocab_size": TINY_VOCAB, "num_layers": 2, "num_heads": 2, "hidden_dim": 32,
              "embedding_dim": 32, "intermediate_dim": 64},
             "google/electra-base-discriminator config.json", classifier=False),
    _encoder("deberta_v3", "DebertaV3Backbone", {**BERT_BASE, "vocabulary_size": 128100},
             {**BERT_SMALL, "bucket_size": 64}, {**BERT_TINY, "bucket_size": 8},
             "microsoft/deberta-v3-base config.json (relative-position buckets 256)",
             inputs=PLAIN),
    _encoder("f_net", "FNetBackbone",
             {"vocabulary_size": 32000, "num_layers": 12, "hidden_dim": 768,
              "intermediate_dim": 3072, "num_segments": 4},
             {"vocabulary_size": SMALL_VOCAB, "num_layers": 4, "hidden_dim": 512,
              "intermediate_dim": 2048},
             {"vocabulary_size": TINY_VOCAB, "num_layers": 2, "hidden_dim": 32,
              "intermediate_dim": 64},
             "google/fnet-base config.json (Fourier mixing instead of attention)",
             inputs=text_inputs("token_ids", "segment_ids")),
    _encoder("roformer_v2", "RoformerV2Backbone",
             {**_bert_like(12, 12, 768, 3072, 12000), "head_size": 64},
             {**BERT_SMALL, "head_size": 64}, {**BERT_TINY, "head_size": 16},
             "junnyu/roformer_v2_chinese_char_base config.json",
             inputs=text_inputs("token_ids", "segment_ids")),
    _encoder("xlnet", "XLNetBackbone", {**BERT_BASE, "vocabulary_size": 32000},
             BERT_SMALL, BERT_TINY, "xlnet/xlnet-base-cased config.json", classifier=False),
    _encoder("esm", "ESMBackbone",
             {"vocabulary_size": 33, "num_layers": 12, "num_heads": 20, "hidden_dim": 480,
              "intermediate_dim": 1920},
             {"num_layers": 4, "num_heads": 8, "hidden_dim": 320, "intermediate_dim": 1280},
             {"num_layers": 2, "num_heads": 2, "hidden_dim": 32, "intermediate_dim": 64},
             "facebook/esm2_t12_35M_UR50D config.json (protein language model; ESM2Backbone "
             "is the same class)", inputs=text_inputs("token_ids"), classifier=False),
]


def _seq2seq(name: str, backbone: str, base: dict, small: dict, tiny: dict, source: str,
             task: bool = True, **extra: Any) -> CatalogEntry:
    prefix = backbone.removesuffix("Backbone")
    head = {"task": f"{prefix}Seq2SeqLM", "target": "tokens"} if task else {}
    fields: dict[str, Any] = {"inputs": seq2seq_inputs, "dims": TEXT_DIMS, **head, **extra}
    return CatalogEntry(
        name=name, backbone=backbone, family=fields.pop("family", "seq2seq"),
        sizes={"tiny": scaled(base, **tiny), "small": scaled(base, **small), "base": base},
        source=source, **fields)


def _t5gemma(layers: int, d: int, ffn: int, heads: int, kv: int, head_dim: int, vocab: int,
             window: int, **extra: Any) -> dict:
    """T5Gemma's symmetric encoder/decoder arguments; local and global layers alternate."""
    types = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    side = {"hidden_dim": d, "intermediate_dim": ffn, "num_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim,
            "layer_types": types}
    return {"vocabulary_size": vocab, "sliding_window": window, **extra,
            **{f"{s}_{k}": v for s in ("encoder", "decoder") for k, v in side.items()}}


def _whisper_inputs(kwargs: Mapping[str, Any], dims: Dims) -> InputSpecs:
    """Log-mel frames for the encoder (2 x the decoder length), decoder ids and mask."""
    return {"encoder_features": ((2 * dims.seq, kwargs.get("num_mels", 80)), "float32"),
            "decoder_token_ids": ((dims.seq,), "int32"),
            "decoder_padding_mask": ((dims.seq,), "int32")}


def _moonshine_inputs(_kwargs: Mapping[str, Any], dims: Dims) -> InputSpecs:
    """Raw 16 kHz audio samples (64 per decoder token) with masks, decoder ids."""
    samples = 64 * dims.seq
    return {"encoder_input_values": ((samples, 1), "float32"),
            "encoder_padding_mask": ((samples,), "bool"),
            "decoder_token_ids": ((dims.seq,), "int32"),
            "decoder_padding_mask": ((dims.seq,), "bool")}


SEQ2SEQ = [
    _seq2seq("t5", "T5Backbone",
             {**_bert_like(6, 8, 512, 2048, 32128), "key_value_dim": 64,
              "use_gated_activation": False, "activation": "relu"},
             _bert_like(4, 8, 512, 2048, SMALL_VOCAB), _bert_like(2, 2, 32, 64, TINY_VOCAB),
             "google-t5/t5-small config.json"),
    _seq2seq("bart", "BartBackbone", {**_bert_like(6, 12, 768, 3072, 50265)},
             _bert_like(4, 8, 512, 2048, SMALL_VOCAB),
             {**_bert_like(2, 2, 32, 64, TINY_VOCAB), "max_sequence_length": 64},
             "facebook/bart-base config.json"),
    _seq2seq("t5gemma", "T5GemmaBackbone",
             _t5gemma(26, 2304, 9216, 8, 4, 256, 256000, 4096, query_pre_attn_scalar=256.0,
                      attn_logit_softcapping=50.0, final_logit_softcapping=30.0),
             _t5gemma(4, 512, 2048, 4, 2, 128, SMALL_VOCAB, 64),
             _t5gemma(2, 32, 64, 2, 1, 16, TINY_VOCAB, 8),
             "google/t5gemma-2b-2b-prefixlm config.json (Gemma 2 2B on both sides)"),
    _seq2seq("t5gemma2", "T5Gemma2Backbone",
             _t5gemma(18, 640, 2048, 4, 1, 256, 262144, 512, query_pre_attn_scalar=256.0),
             _t5gemma(4, 512, 2048, 4, 1, 128, SMALL_VOCAB, 64),
             _t5gemma(2, 32, 64, 2, 1, 16, TINY_VOCAB, 8),
             "google/t5gemma-2-270m-270m config.json (Gemma 3 270M on both sides, text only)"),
    _seq2seq("edrec", "EdRecBackbone",
             {"vocab_size": 32128, "num_layers_enc": 6, "num_layers_dec": 6,
              "hidden_dim": 512, "intermediate_dim": 2048, "num_heads": 8},
             {"vocab_size": SMALL_VOCAB, "num_layers_enc": 4, "num_layers_dec": 4},
             {"vocab_size": TINY_VOCAB, "num_layers_enc": 2, "num_layers_dec": 2,
              "hidden_dim": 32, "intermediate_dim": 64, "num_heads": 2},
             "no published checkpoint: T5-small's widths (keras-hub's EdRec recommender "
             "encoder-decoder)"),
    _seq2seq("whisper", "WhisperBackbone",
             {**_bert_like(6, 8, 512, 2048, 51865), "num_mels": 80},
             _bert_like(4, 6, 384, 1536, 51865),
             {**_bert_like(2, 2, 32, 64, TINY_VOCAB), "max_encoder_sequence_length": 64,
              "max_decoder_sequence_length": 32},
             "openai/whisper-base config.json (80 log-mel bins; small = whisper-tiny's widths)",
             task=False, family="audio", inputs=_whisper_inputs,
             dims={**TEXT_DIMS, "base": Dims(448, 0)}),
    _seq2seq("moonshine", "MoonshineBackbone",
             {"vocabulary_size": 32768, "filter_dim": 288, "encoder_num_layers": 6,
              "decoder_num_layers": 6, "hidden_dim": 288, "intermediate_dim": 1152,
              "encoder_num_heads": 8, "decoder_num_heads": 8},
             {"vocabulary_size": SMALL_VOCAB, "encoder_num_layers": 4,
              "decoder_num_layers": 4},
             {"vocabulary_size": TINY_VOCAB, "filter_dim": 32, "encoder_num_layers": 2,
              "decoder_num_layers": 2, "hidden_dim": 32, "intermediate_dim": 128,
              "encoder_num_heads": 2, "decoder_num_heads": 2},
             "UsefulSensors/moonshine-tiny config.json", task=False, family="audio",
             inputs=_moonshine_inputs),
]

ENTRIES = [*ENCODERS, *SEQ2SEQ]

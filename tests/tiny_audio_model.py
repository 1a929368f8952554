"""A tiny, randomly initialised Qwen2-Audio model with a processor, built offline, for the white-box tests.

The real classes with small dimensions: Qwen2AudioConfig (a 1-layer audio encoder of width 16, a 2-layer
Qwen2 text decoder of width 32), Qwen2AudioForConditionalGeneration, and a Qwen2AudioProcessor made of a
WhisperFeatureExtractor (128 mel bins at 16 kHz, as the real one) and a word-level tokenizer built with
`tokenizers` from a word list, with the special tokens Qwen2-Audio's chat format uses. Saved with
save_pretrained, it loads back through the same auto classes a real checkpoint does (evaluation.local_model).
Its answers are gibberish: tests assert on mechanics, never on what it says.

    python -m tests.tiny_audio_model --out DIR [--seed 0] [--layers 2]
"""

from __future__ import annotations

import argparse
import string
from pathlib import Path

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"]
WORDS = ("i can not help with that sure here is how to do it the game kitchen sorry no yes finish him "
         "respond request audio system user assistant you are a helpful final answer").split()
# the chat format of Qwen2-Audio-Instruct: a default system turn, each audio as bos + AUDIO + eos
CHAT_TEMPLATE = (
    "{% set n = namespace(audio=0) %}"
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'audio' %}{% set n.audio = n.audio + 1 %}"
    "Audio {{ n.audio }}: <|audio_bos|><|AUDIO|><|audio_eos|>\n"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def build(out: str | Path, seed: int = 0, layers: int = 2, model_type: str = "qwen2_audio") -> Path:
    """Write a tiny random Qwen2-Audio model and its processor into `out` (a model_type other than
    qwen2_audio writes a text-only model of that type: what the backend must refuse)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (GenerationConfig, PreTrainedTokenizerFast, Qwen2AudioConfig,
                              Qwen2AudioForConditionalGeneration, Qwen2AudioProcessor, Qwen2Config, Qwen2ForCausalLM,
                              WhisperFeatureExtractor)

    out = Path(out)
    vocab: dict[str, int] = {}
    for token in [*SPECIAL, "[UNK]", *string.printable.strip(), *WORDS]:
        vocab.setdefault(token, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.add_special_tokens(SPECIAL)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        unk_token="[UNK]")
    text = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=2,
                num_key_value_heads=1, vocab_size=len(vocab), max_position_embeddings=4096)
    torch.manual_seed(seed)
    if model_type != "qwen2_audio":  # a text-only model
        model = Qwen2ForCausalLM(Qwen2Config(**text))
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        return out
    config = Qwen2AudioConfig(
        audio_config=dict(model_type="qwen2_audio_encoder", d_model=16, encoder_layers=1, encoder_attention_heads=2,
                          encoder_ffn_dim=32, num_mel_bins=128, max_source_positions=1500),
        text_config=dict(model_type="qwen2", **text), audio_token_index=vocab["<|AUDIO|>"])
    model = Qwen2AudioForConditionalGeneration(config)
    model.generation_config = GenerationConfig(eos_token_id=vocab["<|im_end|>"], pad_token_id=vocab["<|endoftext|>"])
    processor = Qwen2AudioProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=128, sampling_rate=16000),
                                    tokenizer=tokenizer, chat_template=CHAT_TEMPLATE)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.tiny_audio_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder to write the model into")
    parser.add_argument("--seed", type=int, default=0, help="torch seed of the random weights (default: 0)")
    parser.add_argument("--layers", type=int, default=2, help="text decoder layers (default: 2)")
    args = parser.parse_args(argv)
    print(f"tiny random Qwen2-Audio model in {build(args.out, args.seed, args.layers)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Build the tiny randomly initialised Llama model that benchmarks/vllm_cpu.py serves with vLLM on CPU.

Nothing comes from a model hub: the weights are random (a fixed seed), the tokenizer is a
byte-level BPE trained here on a few sentences, and the chat template is a few lines of
Jinja. The model is useless as a language model; what matters is that vLLM runs it with its
real scheduler, queue and metrics. Its size keeps a CPU step short: 2 layers, hidden 128,
4 heads, so each head has 32 dimensions (vLLM's CPU attention refuses 16 on the first request).

Run it with the vLLM venv's Python, which has torch, transformers and tokenizers
(benchmarks/vllm_cpu.py does, when DIR has no model yet):

    /work/wt/vllm-venv/bin/python benchmarks/vllm_model.py DIR

The constants below are importable without those packages (the unit tests read them).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

SEED = 0
VOCAB_SIZE = 512
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SENTENCES = [
    "Start-time fair queueing gives each user a share of the engine in proportion to its weight.",
    "A proxy in front of an inference server decides which request goes next.",
    "The engine batches running sequences and generates one token for each of them per step.",
    "Requests that do not fit in the batch wait in the engine's first-come-first-served queue.",
    "Time to first token grows with the queue; the time between tokens grows with the batch.",
    "Heavy users keep many requests in flight, light users only a few.",
    "The quick brown fox jumps over the lazy dog, again and again, until the answer is long enough.",
    "Numbers like 1, 22, 333 and 4444 appear in prompts too, and so do symbols: #, %, & and *.",
]


def llama_config(vocab_size: int, bos_token_id: int, eos_token_id: int) -> dict[str, Any]:
    """The keyword arguments of transformers' LlamaConfig for the tiny model."""
    hidden, heads = 128, 4
    return {
        "vocab_size": vocab_size,
        "hidden_size": hidden,
        "intermediate_size": 4 * hidden,
        "num_hidden_layers": 2,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "head_dim": hidden // heads,
        "max_position_embeddings": 2048,
        "bos_token_id": bos_token_id,
        "eos_token_id": eos_token_id,
        "tie_word_embeddings": False,
        "dtype": "bfloat16",  # what vLLM's CPU backend runs it in
    }


def bpe_tokenizer() -> Any:
    """The byte-level BPE (a ``tokenizers.Tokenizer``) trained on SENTENCES, with SPECIAL_TOKENS first;
    benchmarks/llamacpp_model.py writes the same one into its GGUF."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(SENTENCES, trainer=trainer)
    return bpe


def build(folder: Path) -> None:
    """Write the model, its tokenizer and its chat template into ``folder`` (as save_pretrained lays them out)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe_tokenizer(), unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)

    torch.manual_seed(SEED)
    config = LlamaConfig(**llama_config(len(tokenizer), tokenizer.bos_token_id, tokenizer.eos_token_id))
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} DIR")
    build(Path(sys.argv[1]))

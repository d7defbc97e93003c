"""Write the tiny randomly initialised Llama that benchmarks/llamacpp_cpu.py serves with llama.cpp's llama-server, as one GGUF file.

Nothing comes from a model hub: the weights are random (a fixed seed), written in F32 with
the `gguf` package's GGUFWriter under llama.cpp's Llama names (what its convert_hf_to_gguf.py
writes), and the tokenizer is the byte-level BPE of benchmarks/vllm_model.py (trained here
on the same sentences, so both engines count a prompt alike), stored as llama.cpp's "gpt2"
tokenizer with its merges and vllm_model's chat template. The model is useless as a
language model; what matters is that llama-server runs it with its real slots, queue and
metrics. It is wider than vLLM's (see LAYERS and HIDDEN): llama.cpp runs vLLM's 2 x 128
in well under a millisecond a step, and a step that short leaves the Python clients, not
the engine, as the bottleneck.

Run it with the llama venv's Python, which has gguf, tokenizers and numpy
(benchmarks/llamacpp_cpu.py does, when the file is not there yet):

    /work/wt/llama-venv/bin/python benchmarks/llamacpp_model.py FILE.gguf

The constants below are importable without those packages.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import vllm_model

LAYERS, HIDDEN, HEADS = 4, 512, 8  # heads of 64 dimensions
FFN = 4 * HIDDEN
CONTEXT = 4096
RMS_EPS = 1e-5
# llama.cpp's token types (gguf.TokenType): what a special token is to its tokenizer.
NORMAL, UNKNOWN, CONTROL = 1, 2, 3


def vocabulary(bpe: Any) -> tuple[list[str], list[int], list[str]]:
    """The tokens in id order, their types and the merges ("a b"), from a ``tokenizers`` BPE."""
    model = json.loads(bpe.to_str())["model"]
    by_id = sorted(model["vocab"].items(), key=lambda item: item[1])
    tokens = [token for token, _ in by_id]
    types = [UNKNOWN if token == "<unk>" else CONTROL if token in vllm_model.SPECIAL_TOKENS else NORMAL for token in tokens]
    merges = [merge if isinstance(merge, str) else " ".join(merge) for merge in model["merges"]]  # pairs in newer tokenizers
    return tokens, types, merges


def tensor_shapes(vocab_size: int) -> dict[str, tuple[int, ...]]:
    """Each tensor's name (llama.cpp's) and shape, as numpy holds it (out, in): the writer reverses it into GGML's order."""
    kv = HIDDEN  # as many key/value heads as query heads
    shapes: dict[str, tuple[int, ...]] = {"token_embd.weight": (vocab_size, HIDDEN), "output_norm.weight": (HIDDEN,),
                                          "output.weight": (vocab_size, HIDDEN)}
    for k in range(LAYERS):
        shapes |= {f"blk.{k}.attn_norm.weight": (HIDDEN,), f"blk.{k}.attn_q.weight": (HIDDEN, HIDDEN),
                   f"blk.{k}.attn_k.weight": (kv, HIDDEN), f"blk.{k}.attn_v.weight": (kv, HIDDEN),
                   f"blk.{k}.attn_output.weight": (HIDDEN, HIDDEN), f"blk.{k}.ffn_norm.weight": (HIDDEN,),
                   f"blk.{k}.ffn_gate.weight": (FFN, HIDDEN), f"blk.{k}.ffn_up.weight": (FFN, HIDDEN),
                   f"blk.{k}.ffn_down.weight": (HIDDEN, FFN)}
    return shapes


def build(path: Path) -> None:
    """Write the model, its tokenizer and its chat template into the GGUF file ``path``."""
    import gguf
    import numpy as np

    tokens, types, merges = vocabulary(vllm_model.bpe_tokenizer())
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("sfqtui tiny llama")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_rope_dimension_count(HIDDEN // HEADS)
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<s>"))
    writer.add_eos_token_id(tokens.index("</s>"))
    writer.add_unk_token_id(tokens.index("<unk>"))
    writer.add_add_bos_token(False)  # the chat template writes it
    writer.add_chat_template(vllm_model.CHAT_TEMPLATE)
    rng = np.random.default_rng(vllm_model.SEED)
    for name, shape in tensor_shapes(len(tokens)).items():
        weights = np.ones(shape) if name.endswith("norm.weight") else rng.normal(0.0, 0.02, shape)
        writer.add_tensor(name, weights.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} FILE.gguf")
    build(Path(sys.argv[1]))

"""A tiny Gemma 3 GGUF file written with the ``gguf`` package: random weights, a vocabulary of letters and a
few words, so the judge's conversion path (transformers' GGUF loader, mlmh's cache) runs without real weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS = 32, 2, 1, 16, 64, 2
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]
WORDS = ["▁the", "▁cat", "▁sat", "▁on", "▁mat", "▁dog", "▁ran", "▁a"]


def vocabulary() -> list[str]:
    """Specials, the word-start marker, every letter, then a few whole words (their pieces are in the list, so
    the merges transformers derives from the vocabulary rebuild them)."""
    pieces = ["▁", *"abcdefghijklmnopqrstuvwxyz"]
    for word in WORDS:
        for end in range(2, len(word) + 1):
            if word[:end] not in pieces:
                pieces.append(word[:end])
    return SPECIALS + pieces


def write_tiny_gemma3(path: Path, seed: int = 0) -> Path:
    """Write the tiny model to ``path`` (a ``.gguf`` file) and return it; ``seed`` picks the weights."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens = vocabulary()
    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_name("tiny gemma 3")
    writer.add_context_length(128)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_key_length(HEAD_DIM)
    writer.add_value_length(HEAD_DIM)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(10000.0)
    writer.add_sliding_window(64)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types([3, 3, 3, 2] + [1] * (len(tokens) - len(SPECIALS)))
    writer.add_pad_token_id(0)
    writer.add_eos_token_id(1)
    writer.add_bos_token_id(2)
    writer.add_unk_token_id(3)
    writer.add_add_bos_token(True)
    writer.add_add_space_prefix(False)

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    def norm(size: int) -> np.ndarray:  # GGUF keeps Gemma's norms as 1 + w; the loader takes the 1 off
        return (1.0 + rng.standard_normal(size) * 0.1).astype(np.float32)

    # the embedding in Q8_0 as in the real file (rows of 32), so dequantising is exercised too
    embedding = weight(len(tokens), HIDDEN)
    writer.add_tensor("token_embd.weight", gguf.quants.quantize(embedding, gguf.GGMLQuantizationType.Q8_0),
                      raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", norm(HIDDEN))
    for block in range(LAYERS):
        tensors = {
            "attn_q": weight(HEADS * HEAD_DIM, HIDDEN), "attn_k": weight(KV_HEADS * HEAD_DIM, HIDDEN),
            "attn_v": weight(KV_HEADS * HEAD_DIM, HIDDEN), "attn_output": weight(HIDDEN, HEADS * HEAD_DIM),
            "ffn_gate": weight(FFN, HIDDEN), "ffn_up": weight(FFN, HIDDEN), "ffn_down": weight(HIDDEN, FFN),
            "attn_q_norm": norm(HEAD_DIM), "attn_k_norm": norm(HEAD_DIM), "attn_norm": norm(HIDDEN),
            "post_attention_norm": norm(HIDDEN), "ffn_norm": norm(HIDDEN), "post_ffw_norm": norm(HIDDEN),
        }
        for name, values in tensors.items():
            writer.add_tensor(f"blk.{block}.{name}.weight", values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path

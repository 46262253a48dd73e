"""Per-sample seeds: each sample's randomness derives from (run seed, condition, document id) only,
so results never depend on batch size or order."""

from __future__ import annotations

import hashlib


def sample_seed(seed: int, condition: str, doc_id: str) -> int:
    """A 63-bit seed from the run seed, a condition key (e.g. a masking spec) and a document id."""
    digest = hashlib.blake2b(f"{seed}\x1f{condition}\x1f{doc_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def mask_seed(seed: int, masking_spec: str, doc_id: str) -> int:
    """The seed of a masking: independent of the model and sampler, so every model sees the same masks."""
    return sample_seed(seed, "mask|" + masking_spec, doc_id)

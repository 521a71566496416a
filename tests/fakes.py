"""Test doubles: a deterministic embedder that needs no model, for unit tests of ranking and packing; and the real
model slowed down (and renamed), for tests of long indexing."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from datetime import datetime
from functools import cache

import numpy as np

from vault_cortex.index.embed import Embedder, Tokenizer, Vectors

_WORD = re.compile(r"\w+")


@cache
def _tokenizer() -> Tokenizer:
    return Tokenizer.bundled()


class FakeEmbedder:
    """Hashes a bag of lower-cased words into `dim` signed buckets; texts sharing words come out similar."""

    def __init__(self, dim: int = 384, model_id: str = "fake-bag-of-words") -> None:
        self.dim = dim
        self.model_id = model_id
        self.calls: list[int] = []  # batch sizes seen, so tests can check what was embedded

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of `texts`; a text without words gets the vector of the empty word."""
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()) or [""]:
                digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                out[row, digest % self.dim] += 1.0 if digest >> 63 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm == 0.0:  # words that cancelled out
                out[row, 0] = norm = 1.0
            out[row] /= norm
        return out

    def count_tokens(self, text: str) -> int:
        """Tokens as the real model counts them (the bundled tokenizer loads in milliseconds)."""
        return _tokenizer().count(text)


class Slowed:
    """The real model, each batch slowed by `delay` seconds (a first index of a big vault, in miniature), under
    another id when given (as a changed model would be)."""

    def __init__(self, model: Embedder, delay: float, model_id: str | None = None) -> None:
        self.model = model
        self.model_id = model_id or model.model_id
        self.dim = model.dim
        self.delay = delay

    def embed(self, texts: Sequence[str]) -> Vectors:
        time.sleep(self.delay)
        return self.model.embed(texts)

    def count_tokens(self, text: str) -> int:
        return self.model.count_tokens(text)


class SetClock:
    """A clock a test moves on: the Cortex is built with it (`Cortex.open(root, clock=SetClock(NOW))`), and the
    test sets `now` where time passes."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

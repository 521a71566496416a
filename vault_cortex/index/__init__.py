"""The derived index: everything rebuilt from the files, never the source of truth.

Lives here: SQLite (notes, chunks, FTS5, links), the usearch vectors and embedding cache, the ONNX embedder,
sync, the upkeep of the index under the facade (opened, set aside when damaged, the write lock), the
activity log and the doctor. May import `files`, `errors` and `config`; nothing above it.
"""

"""The derived index: everything rebuilt from the files, never the source of truth.

Lives here: SQLite (notes, chunks, FTS5, links), the usearch vectors and embedding cache, the ONNX embedder,
sync, `Index` (opened, set aside when damaged, the write lock), recent activity (read from the activity
log, which is canonical and lives in `files`) and the doctor. May import `files`, `errors` and `config`;
nothing above it.
"""

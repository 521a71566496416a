"""The one way to change the vault: every write to a note, and to vault-cortex's own files beside them.

Lives here: `Vault` (reading notes, and `change()`: the write lock, ETag checks, atomic writes, the edit
events, and indexing exactly the paths a change touched). May import `files`, `index`, `errors` and
`config`; nothing above it.
"""

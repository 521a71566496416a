"""The canonical store: the vault's markdown files and how to read and edit them.

Lives here: the vault walk and atomic writes, note parsing, frontmatter and properties, YAML text, minimal edits,
links and their resolution, chunking and the noise filter. May import only `errors` and `config`; nothing above it.
"""

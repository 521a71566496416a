"""The canonical store: the vault's markdown files and how to read and edit them.

Lives here: the vault walk and atomic writes, note parsing, frontmatter and properties, YAML text, minimal edits,
links and their resolution, chunking, the noise filter, and the activity log (`.cortex/activity/`: canonical,
versioned data kept beside the notes, merged by git). May import only `errors` and `config`; nothing above it.
"""

"""Consolidation ("sleep"): plan, apply with a journal, and explain what changed.

Lives here: the plan (duplicates, promotion, decay, wiring, pruning), its operations, the journal, merging,
tiers and summaries and the dream log (imports live in `importers`). May import `importers`, `identity`,
`recall`, `store`, `index`, `files`.
"""

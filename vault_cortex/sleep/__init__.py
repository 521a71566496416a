"""Consolidation ("sleep"): plan, apply with a journal, and explain what changed.

Lives here: the plan (duplicates, promotion, decay, wiring, pruning), its operations, the journal, merging,
tiers and summaries, the dream log and transcript import. May import `identity`, `recall`, `index`, `files`.
"""

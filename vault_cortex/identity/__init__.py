"""Who the vault's owner is: habits, resonance weights, open questions, and the session-start context.

Lives here: habit matching and reinforcement, resonance and touches, curiosity, and the context that packs
pinned notes, habits and questions with recall. May import `recall`, `index`, `files`; never `sleep`.
"""

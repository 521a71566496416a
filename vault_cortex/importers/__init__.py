"""Bringing outside memories into the vault: Claude Code transcripts (and the session-end capture), ChatGPT
exports and the MCP memory server's graph, written as raw notes through the one write path.

Lives here: the formats' readers (transcript, chatgpt, mcp_memory), the detection of a file's format
(imports) and the import log that makes importing again add nothing and never overwrite an edited note
(importlog). May import `files`, `store`, `errors` and `config`; nothing above them.
"""

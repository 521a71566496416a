"""vault-cortex's adapters that serve a vault: HTTP API, MCP, file watcher, agent hooks and their commands."""

"""The command line: one module per command group, each a thin shell over the `Cortex` facade.

Lives here: argument parsing and output formatting only; every command calls the one core operation that the
HTTP routes and MCP tools also call. May import anything in `vault_cortex`; nothing imports it but `server`.
"""

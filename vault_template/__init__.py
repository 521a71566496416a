"""Marks the starter vault as package data; `vault-cortex init` copies everything here but this file."""

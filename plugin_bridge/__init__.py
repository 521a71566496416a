"""Marks the built Obsidian plugin (main.js, manifest.json, styles.css) as package data: `vault_cortex.plugin`."""

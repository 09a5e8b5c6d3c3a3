"""Pure command builders and parsers for external tools: text in, records out."""

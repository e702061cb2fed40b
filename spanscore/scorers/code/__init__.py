"""The built-in code scorers (no LLM); importing this package registers them."""

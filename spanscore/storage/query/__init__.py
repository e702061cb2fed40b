"""Query safety: the engine's own parser and an allowlist over the whole tree, limits, readers."""

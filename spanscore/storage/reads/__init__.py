"""Named reads for features: each query spanscore runs for a page, an alert or a resolver."""

"""The LLM judge: client, answer checks and output ladder, resilience, tracing, workers."""

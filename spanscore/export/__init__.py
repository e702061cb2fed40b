"""What leaves spanscore over OTLP: scores as evaluation events, pass-through forwarding."""

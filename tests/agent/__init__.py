"""The agent loop: tools, retries, cancellation, flat events."""

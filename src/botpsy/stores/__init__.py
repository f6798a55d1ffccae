"""Real local stores for the assistant's data, read and written atomically."""

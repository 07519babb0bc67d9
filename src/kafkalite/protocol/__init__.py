"""kafkalite.protocol."""

"""kafkalite.server."""

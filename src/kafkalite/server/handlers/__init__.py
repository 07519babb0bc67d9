"""kafkalite.server.handlers."""

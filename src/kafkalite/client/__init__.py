"""kafkalite.client."""

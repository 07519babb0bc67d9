"""kafkalite.storage."""

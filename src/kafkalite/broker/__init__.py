"""kafkalite.broker."""

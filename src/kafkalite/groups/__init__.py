"""kafkalite.groups."""

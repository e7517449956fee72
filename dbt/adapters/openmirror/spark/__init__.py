"""Spark itself: the session's default settings and short causes for failing statements."""

"""What a run publishes: the run plan, the schema plan, key rules and the fast diff's choices (pure)."""

"""A local stand-in for the mirroring service: applies a landing zone to Delta tables."""

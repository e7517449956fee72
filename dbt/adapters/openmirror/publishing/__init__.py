"""Publishing into a table folder exactly once: the journaled sequence, leases, staging, recovery
and the restart protocol's waits."""

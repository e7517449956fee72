"""The open mirroring landing zone's documented rules (naming, markers, columns, metadata and status
files), shared by the writer, the local mirror and the validator."""

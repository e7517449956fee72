"""The row marker column of a change file and its values (spec section 3).

The SQL that writes them is in macros/sql/ (which spell them literally); Python reads them
back: the publisher checks the column of each staged file, the response counts rows per marker.
"""

ROW_MARKER = "__rowMarker__"
INSERT, UPDATE, DELETE, UPSERT = 0, 1, 2, 4

"""What a Hive metastore stores of the text the adapter gives it.

- A table property's value: Hive's schemas keep it in 4,000 characters on older metastores and
  32,700 on the embedded Derby of a session profile; the snapshot's records of its columns grow
  with the table. A longer value is stored in parts (as Spark stores a table's schema):
  `key` = `openmirror-parts:<n>` and `key.part.0` … `key.part.<n-1>`, written by
  `openmirror_properties` (macros/sql/stage.sql) and read back by `read_properties` here
  and `openmirror_read_properties` (macros/package/plan.sql).
- A view's text: Derby keeps 32,700 characters. A view the adapter would make longer is built
  another way (a table, or a snapshot merged rather than overlaid).
"""

import re
from collections.abc import Mapping

PROPERTY_PART_LENGTH = 4000
PARTS_MARKER = "openmirror-parts:"
PART_KEY = re.compile(r"(?P<key>.+)\.part\.\d+")
VIEW_TEXT_LIMIT = 32_000


def read_properties(stored: Mapping[str, str]) -> dict[str, str]:
    """Table properties as they were given, their parts joined."""
    properties = {}
    for key, value in stored.items():
        part = PART_KEY.fullmatch(key)
        if part and part["key"] in stored:  # a part of it, or left from an earlier, longer value
            continue
        if value.startswith(PARTS_MARKER):
            count = int(value[len(PARTS_MARKER) :])
            value = "".join(stored[f"{key}.part.{index}"] for index in range(count))
        properties[key] = value
    return properties

"""A process that increments a counter file with conditional writes, for the journal race tests:
read the file and its version, write the next value only if the version is unchanged, and read
again after a conflict.

    python -m tests.support.cas_counter LANDING_ZONE PATH TIMES

LANDING_ZONE is a local folder or the DFS stand-in's landing zone URL (its CA in
REQUESTS_CA_BUNDLE). Prints how many conflicts it met.
"""

import sys

from dbt.adapters.openmirror.errors import WriteConflictError
from dbt.adapters.openmirror.storage import open_landing_zone
from dbt.adapters.openmirror.storage.location import is_remote, parse_location


def storage_for(landing_zone: str):
    if not is_remote(landing_zone):
        return open_landing_zone(landing_zone)
    from dbt.adapters.openmirror.storage.onelake import OneLakeStorage
    from tests.support.dfs_emulator import FixedTokenCredential

    return OneLakeStorage(parse_location(landing_zone), FixedTokenCredential())


def increment(storage, path: str) -> int:
    """One increment; the number of conflicts before it went through."""
    conflicts = 0
    while True:
        found = storage.read_versioned(path)
        value, version = (int(found.text), found.version) if found else (0, None)
        try:
            storage.write_text_if(path, f"{value + 1}\n", version)
            return conflicts
        except WriteConflictError:
            conflicts += 1


def main() -> None:
    landing_zone, path, times = sys.argv[1], sys.argv[2], int(sys.argv[3])
    storage = storage_for(landing_zone)
    print(sum(increment(storage, path) for _ in range(times)), flush=True)


if __name__ == "__main__":
    main()

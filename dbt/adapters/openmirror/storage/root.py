"""The landing zone root must exist before anything is published into it.

A mistyped `landing_zone` would otherwise be created and loaded in full, unnoticed, while the
mirrored database reads elsewhere. A mirrored database item always has `Files/LandingZone`, so
a root that is missing is a mistake unless the profile asks for it to be created.
"""

import threading
from collections.abc import Callable

from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.storage.base import LandingZoneStorage

# Models start in parallel threads: one of them creates the root and says so.
_creating = threading.Lock()


def check_root(storage: LandingZoneStorage, create: bool, log: Callable[[str], None]) -> None:
    """Raise LandingZoneConfigError when the root does not exist, or create it when `create`."""
    if storage.exists(""):
        return
    if not create:
        raise LandingZoneConfigError(
            f"landing zone {storage.location} does not exist. If the path is mistyped, fix "
            "`landing_zone` in the profile; to have it created, set `create_landing_zone: true` "
            "in the profile"
        )
    with _creating:
        if storage.exists(""):
            return
        storage.create_folder("")
        log(f"Created the landing zone {storage.location} (create_landing_zone: true)")

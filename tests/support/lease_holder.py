"""A lease holder for the lease tests, run as pid 1 of a PID namespace of its own (`unshare --pid
--fork`): it forks until a child gets the pid asked for; that child takes the lease of the table
folder, prints `held <pid>` and keeps the lease until its stdin closes, then releases it.

    python -m tests.support.lease_holder LANDING_ZONE TABLE_FOLDER PID
"""

import os
import sys
import traceback
from pathlib import Path

from dbt.adapters.openmirror.publishing.lease import LeaseManager
from dbt.adapters.openmirror.storage import LocalStorage


def hold(landing_zone: str, table_folder: str) -> None:
    manager = LeaseManager(LocalStorage(Path(landing_zone)))
    lease = manager.acquire(table_folder, "holder-run", "orders", ttl_seconds=3600, wait_seconds=0)
    print(f"held {os.getpid()}", flush=True)
    sys.stdin.read()
    manager.release(lease)


def main() -> None:
    landing_zone, table_folder, wanted = sys.argv[1], sys.argv[2], int(sys.argv[3])
    while True:
        child = os.fork()
        if child == 0:
            status = 0
            if os.getpid() == wanted:
                try:
                    hold(landing_zone, table_folder)
                except BaseException:
                    traceback.print_exc()
                    status = 1
            os._exit(status)
        _, status = os.waitpid(child, 0)
        if child >= wanted:
            sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()

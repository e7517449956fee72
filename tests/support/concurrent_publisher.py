"""A publisher process for the concurrency tests: takes the lease, stages one file and publishes
it with the real Publisher, `rounds` times, sleeping at random between steps.

    python -m tests.support.concurrent_publisher LANDING_ZONE NAME ROUNDS SEED

Prints one JSON line per round: {"round", "published": [names] | null, "refused": message}.
"""

import json
import random
import sys
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.openmirror.errors import LeaseHeldError, PublishError
from dbt.adapters.openmirror.publishing.lease import LeaseManager
from dbt.adapters.openmirror.publishing.publisher import Publisher
from dbt.adapters.openmirror.rules.landing_zone import scratch_path
from dbt.adapters.openmirror.rules.markers import UPSERT
from dbt.adapters.openmirror.storage import LocalStorage

TABLE = "dbo.schema/contended"


def publish_once(storage: LocalStorage, name: str, round_number: int, pause) -> dict:
    run_id = f"{name}-{round_number}-{uuid.uuid4().hex[:6]}"
    leases = LeaseManager(storage)
    try:
        lease = leases.acquire(TABLE, run_id, name, ttl_seconds=60, wait_seconds=random.choice([0, 2]))
    except LeaseHeldError as exc:
        return {"round": round_number, "published": None, "refused": str(exc)}
    try:
        publisher = Publisher(storage)
        state = publisher.table_state(TABLE)
        staged = scratch_path(run_id)
        (storage.root / staged).mkdir(parents=True)
        table = pa.table({"id": [round_number], "run": [run_id], "__rowMarker__": pa.array([4], pa.int32())})
        pq.write_table(table, storage.root / staged / "part-0.parquet")
        pause()
        pending = publisher.prepare(
            TABLE, ["id", "run"], staged, state, {UPSERT: 1}, name, run_id, full_load=not state.exists, rebuild=False
        )
        pause()
        fence = leases.fence(lease)
        publisher.begin(pending, fence)
        pause()
        publisher.complete(pending, fence)
        publisher.commit(pending, fence)
        return {"round": round_number, "published": pending.names, "run": run_id, "refused": None}
    except PublishError as exc:
        return {"round": round_number, "published": None, "refused": str(exc)}
    finally:
        leases.release(lease)


def main() -> None:
    root, name, rounds, seed = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    random.seed(seed)
    storage = LocalStorage(root)

    def pause():
        time.sleep(random.random() * 0.02)

    for round_number in range(rounds):
        pause()
        print(json.dumps(publish_once(storage, name, round_number, pause)), flush=True)


if __name__ == "__main__":
    main()

"""Where Spark writes a run's change files before the publisher renames them into place.

Two ways (profile field `spark_staging`):
- `direct`: Spark writes straight into the landing zone's `_scratchPad/` (a local landing zone, or
  Fabric / Databricks Spark that can write the `abfss://` URI);
- `upload`: Spark writes into a local temporary folder and the adapter uploads each file into
  `_scratchPad/` (streamed in parallel chunks), e.g. a laptop publishing to OneLake.
`auto` (default) picks `direct` when the landing zone is a folder Spark shares with the adapter,
`upload` when Spark runs locally (`local[...]` master), and otherwise probes once whether Spark can
write the landing zone, falling back to `upload`. Either way the staged files are in the landing
zone's `_scratchPad/` before the publish is journaled, so recovery works the same.
"""

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dbt.adapters.openmirror.storage.base import LandingZoneStorage

AUTO, DIRECT, UPLOAD = "auto", "direct", "upload"
STAGING_MODES = (AUTO, DIRECT, UPLOAD)


def choose_mode(
    setting: str, shared_with_spark: bool, spark_master: Callable[[], str | None], spark_can_write: Callable[[], bool]
) -> str:
    """The staging mode for `setting`. `spark_master` (a query) and `spark_can_write` (a probe
    write) are only called when the answer depends on them."""
    if setting != AUTO:
        return setting
    if shared_with_spark:
        return DIRECT
    if (spark_master() or "").startswith("local"):
        return UPLOAD
    return DIRECT if spark_can_write() else UPLOAD


@dataclass(frozen=True)
class Staging:
    #: The run's staged folder in the landing zone: what the publisher and the journal refer to.
    path: str
    #: Where Spark writes the change files: the landing zone itself, or `local_folder`.
    uri: str
    local_folder: str | None = None


def start_staging(storage: LandingZoneStorage, path: str, mode: str) -> Staging:
    if mode == DIRECT:
        return Staging(path, storage.spark_uri(path))
    local = Path(tempfile.mkdtemp(prefix="dbt-openmirror-staging-"))
    # Spark's INSERT OVERWRITE DIRECTORY creates the folder itself; a plain path URI, as for
    # local landing zones (Hadoop reads it unencoded).
    return Staging(path, f"file://{local.as_posix()}/changes", str(local))


def land_staged_files(storage: LandingZoneStorage, staging: Staging) -> None:
    """Upload mode: copy Spark's data files into the landing zone's staged folder, then remove
    the local copy. Spark's `_SUCCESS` and `.crc` side files are left behind."""
    if staging.local_folder is None:
        return
    try:
        written = Path(staging.local_folder) / "changes"
        for local_file in sorted(written.iterdir()):
            if local_file.name.startswith(("_", ".")) or not local_file.is_file():
                continue
            storage.upload_file(local_file, f"{staging.path}/{local_file.name}")
    finally:
        discard_local(staging)


def discard_local(staging: Staging) -> None:
    if staging.local_folder is not None:
        shutil.rmtree(staging.local_folder, ignore_errors=True)

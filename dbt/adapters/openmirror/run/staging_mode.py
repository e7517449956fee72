"""How Spark stages change files in this invocation (publishing/staging.py), decided once: from
the profile's `spark_staging`, asking Spark only when the answer depends on it."""

import threading
import uuid
from collections.abc import Callable

from dbt.adapters.openmirror.publishing.staging import choose_mode
from dbt.adapters.openmirror.rules.landing_zone import PROBE_FOLDER_PREFIX
from dbt.adapters.openmirror.run.statements import Statements
from dbt.adapters.openmirror.storage.base import LandingZoneStorage


class StagingModeChoice:
    def __init__(
        self,
        setting: str,
        storage: LandingZoneStorage,
        statements: Statements,
        info: Callable[[str], None],
        debug: Callable[[str], None],
    ) -> None:
        self.setting = setting
        self.storage = storage
        self.statements = statements
        self.info = info
        self.debug = debug
        self._mode: str | None = None
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            if self._mode is None:
                self._mode = choose_mode(
                    self.setting,
                    self.storage.shared_with_spark,
                    self.spark_master,
                    self.spark_can_write,
                )
                self.info(f"Spark stages change files with spark_staging={self._mode}")
            return self._mode

    def spark_master(self) -> str | None:
        rows = self.statements.query("openmirror_spark_master_sql")
        return str(rows[0][1]) if rows else None

    def spark_can_write(self) -> bool:
        """A probe write into the landing zone's _scratchPad."""
        probe = f"{PROBE_FOLDER_PREFIX}{uuid.uuid4().hex}"
        uri = self.storage.spark_uri(probe)
        try:
            self.statements.execute(
                "openmirror_write_files_sql",
                uri=uri,
                select_sql="select 1 as probe",
                compression="snappy",
                max_rows_per_file=None,
                writers=1,
                shuffle=False,
            )
        except Exception as exc:  # any failure means: let the adapter upload instead
            self.info(
                f"Spark cannot write {self.storage.location} itself ({type(exc).__name__}); "
                "change files are uploaded by the adapter"
            )
            return False
        finally:
            try:
                self.storage.delete_folder(probe)
            except Exception as exc:  # a leftover probe in _scratchPad is harmless
                self.debug(f"could not delete the staging probe {probe}: {exc}")
        return True

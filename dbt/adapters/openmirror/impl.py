"""The adapter: dbt-spark plus the helpers the `open_mirror` materialization calls.

Each helper takes plain values and delegates to a module of one concern; the Jinja
materialization only sequences them.
"""

import uuid
from functools import cached_property
from typing import Any, Dict, List, Mapping, Optional, Sequence

from dbt.adapters.base import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.invocation import get_invocation_id

from dbt.adapters.openmirror import change_sql
from dbt.adapters.openmirror.config import MirrorConfig, mirror_config
from dbt.adapters.openmirror.connections import OpenMirrorConnectionManager
from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.keys import raise_key_problems, resolve_key_columns
from dbt.adapters.openmirror.landing_zone import SCRATCH_FOLDER, scratch_path
from dbt.adapters.openmirror.publisher import PublishedFiles, Publisher, TableFolderState
from dbt.adapters.openmirror.response import OpenMirrorResponse, publish_response
from dbt.adapters.openmirror.run_plan import (
    INCREMENTAL,
    REBUILD,
    RunPlan,
    SnapshotRecord,
    plan_run,
    snapshot_properties,
    snapshot_record,
)
from dbt.adapters.openmirror.schema_plan import ColumnSpec
from dbt.adapters.openmirror.storage import LandingZoneStorage, open_landing_zone

logger = AdapterLogger("OpenMirror")


def _column_specs(columns: Sequence[Any]) -> List[ColumnSpec]:
    return [ColumnSpec(c.column, c.dtype) for c in columns]


class OpenMirrorAdapter(SparkAdapter):
    ConnectionManager = OpenMirrorConnectionManager

    @cached_property
    def landing_zone(self) -> LandingZoneStorage:
        return open_landing_zone(self.config.credentials.landing_zone)

    @cached_property
    def publisher(self) -> Publisher:
        return Publisher(self.landing_zone)

    def debug_query(self) -> None:
        super().debug_query()
        probe = f"{SCRATCH_FOLDER}/dbt-openmirror/debug-{uuid.uuid4().hex}"
        try:
            self.landing_zone.check_writable(probe)
        except OSError as exc:
            raise LandingZoneConfigError(
                f"landing zone {self.landing_zone.location} is not writable: {exc}"
            ) from exc

    # -- configuration and checks -------------------------------------------------------------

    @available
    def openmirror_config(
        self, model: str, schema: str, identifier: str, config: Mapping[str, Any]
    ) -> MirrorConfig:
        return mirror_config(model, schema, identifier, config)

    @available
    def openmirror_key_columns(self, mirror: MirrorConfig, columns: Sequence[Any]) -> List[str]:
        return resolve_key_columns(mirror.model, mirror.unique_key, [c.column for c in columns])

    @available
    def openmirror_check_keys(self, mirror: MirrorConfig, relation: Any, key_columns: List[str]) -> None:
        _, problems = self.execute(change_sql.key_problems_sql(str(relation), key_columns), fetch=True)
        raise_key_problems(mirror.model, key_columns, [tuple(row) for row in problems])

    # -- what the landing zone and the snapshot say ---------------------------------------------

    @available
    def openmirror_table_state(self, mirror: MirrorConfig) -> TableFolderState:
        return self.publisher.table_state(mirror.table_folder)

    @available
    def openmirror_snapshot_record(self, relation: Any) -> Optional[SnapshotRecord]:
        if relation is None:
            return None
        _, rows = self.execute(f"show tblproperties {relation}", fetch=True)
        return snapshot_record({str(row[0]): str(row[1]) for row in rows})

    @available
    def openmirror_snapshot_record_sql(self, relation: Any, mirror: MirrorConfig, sequence_number: int) -> str:
        properties = snapshot_properties(mirror.table_folder, sequence_number)
        return change_sql.snapshot_record_sql(str(relation), properties)

    @available
    def openmirror_plan_run(
        self,
        mirror: MirrorConfig,
        key_columns: List[str],
        state: TableFolderState,
        snapshot: Optional[SnapshotRecord],
        full_refresh: bool,
        previous_columns: Optional[Sequence[Any]],
        current_columns: Sequence[Any],
    ) -> RunPlan:
        plan = plan_run(
            mirror.model, mirror.table_folder, key_columns, state, snapshot, full_refresh,
            _column_specs(previous_columns) if previous_columns is not None else None,
            _column_specs(current_columns), mirror.on_schema_change,
        )
        if plan.mode == REBUILD:
            logger.warning(f"Model '{mirror.model}': rebuilding {mirror.table_folder}: {plan.reason}")
        return plan

    # -- staging: Spark writes the change rows ----------------------------------------------------

    @available
    def openmirror_change_sql(
        self,
        mirror: MirrorConfig,
        plan: RunPlan,
        new_relation: Any,
        previous_relation: Any,
        key_columns: List[str],
    ) -> str:
        if plan.mode == INCREMENTAL:
            return change_sql.change_rows_sql(
                str(new_relation), str(previous_relation), plan.schema, key_columns,
                mirror.change_markers, mirror.row_marker_position,
            )
        return change_sql.initial_load_sql(
            str(new_relation), plan.schema, mirror.change_markers, mirror.row_marker_position
        )

    @available
    def openmirror_staging(self, mirror: MirrorConfig) -> Dict[str, str]:
        run_id = f"{get_invocation_id()}-{uuid.uuid4().hex[:8]}"
        path = scratch_path(run_id)
        return {"path": path, "uri": self.landing_zone.spark_uri(path)}

    @available
    def openmirror_write_sql(self, mirror: MirrorConfig, uri: str, select_sql: str) -> str:
        return change_sql.write_files_sql(
            uri, select_sql, mirror.parquet_compression, mirror.max_rows_per_file
        )

    @available
    def openmirror_marker_counts(self, uri: str) -> Dict[int, int]:
        _, rows = self.execute(change_sql.marker_counts_sql(uri), fetch=True)
        return {int(row[0]): int(row[1]) for row in rows}

    # -- publishing ---------------------------------------------------------------------------

    @available
    def openmirror_publish(
        self,
        mirror: MirrorConfig,
        key_columns: List[str],
        staging: Dict[str, str],
        state: TableFolderState,
        plan: RunPlan,
        counts: Dict[int, int],
    ) -> PublishedFiles:
        """Publish the staged files; an incremental run without changes publishes nothing."""
        rows = sum(counts.values())
        if plan.mode == INCREMENTAL and rows == 0:
            self.publisher.discard(staging["path"])
            return PublishedFiles([], 0, state.last_sequence_number)
        try:
            return self.publisher.publish(
                mirror.table_folder,
                key_columns,
                staging["path"],
                expected_last_sequence_number=state.last_sequence_number,
                expected_rows=rows,
                model=mirror.model,
                rebuild=plan.mode == REBUILD,
            )
        except Exception:
            # Whatever was not renamed into place is not published: leave no staged copy.
            self.publisher.discard(staging["path"])
            raise

    @available
    def openmirror_keep_columns_sql(self, relation: Any, plan: RunPlan) -> str:
        return change_sql.keep_columns_sql(str(relation), plan.schema.kept)

    @available
    def openmirror_response(
        self, mirror: MirrorConfig, plan: RunPlan, counts: Dict[int, int], files: List[str]
    ) -> OpenMirrorResponse:
        return publish_response(counts, files, mirror.table_folder, plan.mode)

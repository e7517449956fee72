"""The adapter: dbt-spark plus the helpers the `open_mirror` materialization calls.

Each helper takes plain values and delegates to a module of one concern; the Jinja
materialization only sequences them. The SQL text comes from the macros in macros/sql/, the
same ones a stock Spark connection renders in package mode; Python decides which to run.
"""

import threading
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from dbt.adapters.base import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.invocation import get_invocation_id

from dbt.adapters.openmirror.planning import hash_diff
from dbt.adapters.openmirror.run.audit import AUDIT_HOOK_MACRO, hook_configured, verdict
from dbt.adapters.openmirror.run.config import AFTER_TESTS, MirrorConfig, is_set, mirror_config
from dbt.adapters.openmirror.connections import OpenMirrorConnectionManager
from dbt.adapters.openmirror.errors import (
    LandingZoneConfigError,
    MirrorConfigError,
    OpenMirrorError,
    RunInterruptedError,
)
from dbt.adapters.openmirror.planning.keys import (
    check_key_types,
    lookalike_warning,
    raise_key_problems,
    resolve_key_columns,
    string_keys,
)
from dbt.adapters.openmirror.rules.landing_zone import STAGING_ROOT, data_file_name, scratch_path
from dbt.adapters.openmirror.publishing.lease import Heartbeat, Lease, LeaseManager
from dbt.adapters.openmirror.publishing.mirroring_service import MirroringService
from dbt.adapters.openmirror.run.model_warnings import warn
from dbt.adapters.openmirror.publishing.publisher import (
    PendingPublish,
    PublishedFiles,
    Publisher,
    TableFolderState,
)
from dbt.adapters.openmirror.publishing.recovery import ABANDON, DISCARD, ROLL_FORWARD, decide
from dbt.adapters.openmirror.run.response import OpenMirrorResponse, describe_change, publish_response
from dbt.adapters.openmirror.planning.run_plan import (
    INCREMENTAL,
    REBUILD,
    Destination,
    SNAPSHOT_HELD,
    RunPlan,
    SnapshotRecord,
    plan_run,
    snapshot_properties,
    snapshot_record,
)
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec, check_reserved_names, plan_schema
from dbt.adapters.openmirror.spark.session_defaults import apply_session_defaults
from dbt.adapters.openmirror.publishing.staging import (
    Staging,
    choose_mode,
    discard_local,
    land_staged_files,
    start_staging,
)
from dbt.adapters.openmirror import storage as landing_zone_storage  # its factory is looked up when called
from dbt.adapters.openmirror.storage import LandingZoneStorage
from dbt.adapters.openmirror.storage.root import check_root

logger = AdapterLogger("OpenMirror")
#: Where a change held for its tests keeps the published snapshot and its key hashes meanwhile.
AUDIT_BASE, AUDIT_BASE_HASHES = "__om_audit_base", "__om_audit_base_hashes"


def _column_specs(columns: Sequence[Any]) -> List[ColumnSpec]:
    return [ColumnSpec(c.column, c.dtype) for c in columns]


def _beside(relation: Any, suffix: str) -> Any:
    return relation.incorporate(path={"identifier": f"{relation.identifier}{suffix}"}, type="table")


@dataclass
class HeldChange:
    """A staged change waiting for its model's tests (publish='after_tests'), with the lease
    that keeps other runs off its table until it is published or discarded."""

    model_id: str
    mirror: MirrorConfig
    pending: PendingPublish
    target: Any
    hashes: Any
    lease: Lease
    heartbeat: Heartbeat


class OpenMirrorAdapter(SparkAdapter):
    ConnectionManager = OpenMirrorConnectionManager

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        apply_session_defaults(self.config)
        # Leases held per thread (dbt runs models in threads), released when the model ends.
        self._leases: Dict[int, List[Tuple[Lease, Heartbeat]]] = {}
        self._leases_lock = threading.Lock()
        # Upload staging: local folders Spark wrote into, removed when the model ends.
        self._local_staging: Dict[int, List[Staging]] = {}
        self._staging_mode: Optional[str] = None
        self._staging_lock = threading.Lock()
        # Warnings of the model running in this thread: logged, and reported with its result.
        self._model_warnings = threading.local()
        # Changes held for their models' tests until the invocation's end (audit.py).
        self._held: List[HeldChange] = []

    @cached_property
    def landing_zone(self) -> LandingZoneStorage:
        credentials = self.config.credentials
        storage = landing_zone_storage.open_landing_zone(credentials.landing_zone, credentials.azure_auth())
        check_root(storage, credentials.create_landing_zone, logger.info)
        return storage

    @cached_property
    def publisher(self) -> Publisher:
        return Publisher(self.landing_zone, MirroringService(self.landing_zone, logger.info))

    @cached_property
    def leases(self) -> LeaseManager:
        return LeaseManager(self.landing_zone)

    def debug_query(self) -> None:
        super().debug_query()
        storage = self.landing_zone
        # At the root, where table folders are created, under a name the mirror ignores.
        probe = f"_dbt-openmirror-debug-{uuid.uuid4().hex}"
        try:
            storage.check_writable(probe)
        except (OSError, OpenMirrorError) as exc:
            raise LandingZoneConfigError(f"landing zone {storage.location} is not writable: {exc}") from exc

    def _sql(self, macro: str, **values: Any) -> str:
        """The SQL text a macro of macros/sql/ renders from plain values. dbt sets the macro
        resolver this needs before it runs a node: every caller runs inside the materialization
        (`dbt debug`, which has none, renders no SQL here)."""
        return str(self.execute_macro(macro, kwargs=values))

    # -- one publisher per table: lease and recovery -----------------------------------------

    @available
    def openmirror_run_id(self) -> str:
        """A new run of a model starts: its id, and no warnings yet."""
        self._model_warnings.messages = []
        return f"{get_invocation_id()}-{uuid.uuid4().hex[:8]}"

    def _warn(self, message: str) -> None:
        """A warning about the running model: logged now, and counted with its result (a
        rebuild, a full reload, a recovery or a takeover is never silent)."""
        warn(message)
        self._warnings().append(message)

    def _warnings(self) -> List[str]:
        if not hasattr(self._model_warnings, "messages"):
            self._model_warnings.messages = []
        return self._model_warnings.messages

    @available
    def openmirror_acquire_lease(self, mirror: MirrorConfig, run_id: str) -> None:
        lease = self.leases.acquire(
            mirror.table_folder, run_id, mirror.model, mirror.lease_ttl_seconds,
            mirror.lease_wait_seconds,
        )
        if lease.taken_from is not None:
            self._warn(
                f"Model '{mirror.model}': took over the lease on {mirror.table_folder} from "
                f"{lease.taken_from.describe()}, which is no longer running"
            )
        heartbeat = Heartbeat(
            self.leases, lease, mirror.lease_ttl_seconds,
            lambda exc: logger.warning(f"Model '{mirror.model}': could not renew its lease: {exc}"),
        )
        with self._leases_lock:
            self._leases.setdefault(threading.get_ident(), []).append((lease, heartbeat))

    def _held_lease(self, mirror: MirrorConfig) -> Lease:
        with self._leases_lock:
            for lease, _ in self._leases.get(threading.get_ident(), []):
                if lease.table_folder == mirror.table_folder:
                    return lease
        raise LandingZoneConfigError(f"Model '{mirror.model}': publishing without a lease")

    def _take_lease(self, mirror: MirrorConfig) -> Tuple[Lease, Heartbeat]:
        """The model's lease and heartbeat, no longer released when the model ends."""
        with self._leases_lock:
            held = self._leases.get(threading.get_ident(), [])
            for entry in held:
                if entry[0].table_folder == mirror.table_folder:
                    held.remove(entry)
                    return entry
        raise LandingZoneConfigError(f"Model '{mirror.model}': publishing without a lease")

    @available
    def openmirror_release_lease(self, mirror: MirrorConfig) -> None:
        self._release_leases(lambda lease: lease.table_folder == mirror.table_folder)

    def _release_leases(self, which) -> None:
        with self._leases_lock:
            held = self._leases.get(threading.get_ident(), [])
            released = [(lease, beat) for lease, beat in held if which(lease)]
            held[:] = [entry for entry in held if entry not in released]
        for lease, heartbeat in released:
            heartbeat.stop()
            try:
                self.leases.release(lease)
            except Exception as exc:  # it expires on its own; the run's own error matters more
                logger.warning(f"could not release the lease on {lease.table_folder}: {exc}")

    def release_connection(self) -> None:
        # dbt releases the connection when a model ends, also when it failed: free its leases.
        self._release_leases(lambda lease: True)
        with self._leases_lock:
            staged = self._local_staging.pop(threading.get_ident(), [])
        for staging in staged:
            discard_local(staging)
        super().release_connection()

    def _refresh_cached_relations(self, relations: Sequence[Any]) -> None:
        """dbt listed relations when the invocation started; another run may have changed these
        since (while this one waited for the lease). Ask Spark again, in one statement."""
        schema = relations[0].schema
        pattern = "|".join(r.identifier for r in relations)
        _, rows = self.execute(
            f"show table extended in {schema} like {self._sql('openmirror_string', value=pattern)}", fetch=True
        )
        found = {
            r.identifier.lower(): r
            for r in self._build_spark_relation_list(rows, self._get_relation_information)
        }
        for relation in relations:
            cached = self.get_relation(relation.database, relation.schema, relation.identifier)
            current = found.get(relation.identifier.lower())
            if cached is not None and (current is None or current.type != cached.type):
                self.cache_dropped(cached)
                cached = None
            if current is not None and cached is None:
                self.cache_added(current)

    def _relation_run_id(self, relation: Any) -> Optional[str]:
        if self.get_relation(relation.database, relation.schema, relation.identifier) is None:
            return None
        record = self.openmirror_snapshot_record(relation)
        return record.run_id if record else None

    @available
    def openmirror_recover(
        self, mirror: MirrorConfig, target_relation: Any, new_relation: Any, backup_relation: Any
    ) -> None:
        """Finish or discard a publish an interrupted run left journaled, and its leftovers."""
        lease = self._held_lease(mirror)
        self._refresh_cached_relations([target_relation, new_relation, backup_relation])
        pending = self.publisher.table_state(mirror.table_folder).pending
        if pending is not None:
            recovery = decide(
                pending,
                self.publisher.published_names(mirror.table_folder),
                set(self.landing_zone.list_names(pending.staged_folder)),
                self._relation_run_id(target_relation),
                self._relation_run_id(new_relation),
            )
            self._warn(f"Model '{mirror.model}': recovering {mirror.table_folder}: {recovery.message}")
            fence = self.leases.fence(lease)
            if recovery.action == ROLL_FORWARD:
                self.publisher.complete(pending, fence)
                if recovery.promote:
                    fence.check()
                    self._replace_snapshot(new_relation, target_relation, backup_relation)
                self.publisher.commit(pending, fence)
            elif recovery.action in (DISCARD, ABANDON):
                self.publisher.abandon(pending, fence)
        self._settle_held_change(mirror, target_relation)
        if lease.taken_from is not None:
            self.publisher.discard(scratch_path(lease.taken_from.run_id))

    def _settle_held_change(self, mirror: MirrorConfig, target_relation: Any) -> None:
        """A change held for its tests whose invocation stopped before its end: done if the
        journal names it (its publish went through), discarded otherwise, with the snapshot it
        was diffed against back in place."""
        held = self.openmirror_snapshot_record(self.get_relation(
            target_relation.database, target_relation.schema, target_relation.identifier
        ))
        if held is None or not held.held:
            return
        record = self.publisher.read_record(mirror.table_folder)
        if record is not None and record.run_id == held.run_id:
            self._release_audit_base(target_relation)
            return
        self._warn(
            f"Model '{mirror.model}': run {held.run_id} held a change to {mirror.table_folder} for its "
            "tests and stopped before the end of its invocation; the change was not published and "
            "is discarded, and the snapshot is back where it was"
        )
        self._restore_audit_base(target_relation)
        if held.run_id is not None:
            self.publisher.discard(scratch_path(held.run_id))

    def _replace_snapshot(self, new_relation: Any, target_relation: Any, backup_relation: Any) -> None:
        """The new output becomes `{{ this }}`; the old one is dropped."""
        existing = self.get_relation(
            target_relation.database, target_relation.schema, target_relation.identifier
        )
        if existing is not None:
            if self.get_relation(backup_relation.database, backup_relation.schema, backup_relation.identifier):
                self.drop_relation(backup_relation)
            self.rename_relation(existing, backup_relation)
        self.rename_relation(new_relation, target_relation)
        if existing is not None:
            self.drop_relation(backup_relation)

    def _replace_hashes(self, new_hashes: Any, previous_hashes: Any, changes: Any) -> None:
        """The output's key hashes go with it. They carry its run id, so a crash before this
        leaves hashes the next run sees do not match the snapshot (it then compares whole rows)."""
        self.drop_relation(previous_hashes)
        self.rename_relation(new_hashes, previous_hashes)
        self.drop_relation(changes)

    # -- configuration and checks -------------------------------------------------------------

    @available
    def openmirror_config(
        self, model: str, schema: str, identifier: str, config: Mapping[str, Any]
    ) -> MirrorConfig:
        return mirror_config(model, schema, identifier, config)

    @available
    def openmirror_key_columns(self, mirror: MirrorConfig, columns: Sequence[Any]) -> List[str]:
        """The key columns as the model spells them, after checking the output's column names
        and the key's types."""
        check_reserved_names(mirror.model, [c.column for c in columns])
        key_columns = resolve_key_columns(mirror.model, mirror.unique_key, [c.column for c in columns])
        specs = {spec.name: spec for spec in _column_specs(columns)}
        for warning in check_key_types(mirror.model, [specs[k] for k in key_columns]):
            self._warn(warning)
        return key_columns

    @available
    def openmirror_key_hashes(
        self, mirror: MirrorConfig, plan: RunPlan, relation: Any, hashes_relation: Any,
        key_columns: List[str], run_id: str,
    ) -> int:
        """One pass over the output: its key hashes table (see macros/sql/hash_diff.sql), in
        buckets sized by the output's row count (a count of Parquet rows reads no column), which
        is returned for sizing a full load's writers."""
        columns = hash_diff.hashed_columns(plan.schema, key_columns)
        keys = {k.lower() for k in key_columns}
        key_types = [c.data_type for c in plan.schema.columns if c.name.lower() in keys]
        properties = {
            hash_diff.HASHES_RUN_ID: run_id, hash_diff.HASHES_COLUMNS: self._sql("openmirror_hash_signature", hashed=columns),
        }
        output_rows = self._row_count(relation)
        self.drop_relation(hashes_relation)
        self.execute(self._sql(
            "openmirror_key_hashes_sql", target=str(hashes_relation), relation=str(relation),
            key_columns=key_columns, hashed=columns, properties=properties,
            buckets=hash_diff.bucket_count(output_rows, key_types),
        ))
        self.cache_added(hashes_relation)
        return output_rows

    def _check_keys(self, mirror: MirrorConfig, relation: Any, key_columns: List[str], counted: bool) -> None:
        sql = self._sql("openmirror_key_problems_sql", relation=str(relation), key_columns=key_columns, counted=counted)
        _, problems = self.execute(sql, fetch=True)
        raise_key_problems(mirror.model, key_columns, [tuple(row) for row in problems], mirror.show_key_values)

    def _warn_key_lookalikes(
        self, mirror: MirrorConfig, plan: RunPlan, key_columns: List[str], keys: Any, new_keys: Any = None,
    ) -> None:
        """String keys that differ only in case or trailing spaces: among all keys (`keys`, a row
        per key), or between this run's new keys (`new_keys`, the changed keys) and all keys."""
        lowered = {k.lower() for k in key_columns}
        strings = string_keys([c for c in plan.schema.columns if c.name.lower() in lowered])
        if not strings:
            return
        sql = self._sql(
            "openmirror_key_lookalikes_sql", keys=str(keys), key_columns=key_columns, string_keys=strings,
            new_keys=str(new_keys) if new_keys is not None else None,
            change_markers=mirror.change_markers,
        )
        _, pairs = self.execute(sql, fetch=True)
        for one, other in pairs:
            self._warn(lookalike_warning(mirror.model, key_columns, (one, other), mirror.show_key_values))

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

    def _destination(self, mirror: MirrorConfig, target_relation: Any) -> Destination:
        return Destination(
            mirror.model, self.config.credentials.landing_zone, mirror.table_folder, str(target_relation)
        )

    @available
    def openmirror_snapshot_record_sql(self, relation: Any, mirror: MirrorConfig, plan: RunPlan, pending: PendingPublish) -> str:
        """The new output records the landing zone, folder and number it will match, the run that
        publishes it and the names its columns are published under."""
        published = [c.published_name for c in (*plan.schema.columns, *plan.schema.kept)]
        properties = snapshot_properties(
            self._destination(mirror, pending.owner or ""), pending.last_sequence_number, pending.run_id, published,
            held=mirror.publish == AFTER_TESTS,
        )
        return self._sql("openmirror_snapshot_record_sql", relation=str(relation), properties=properties)

    @available
    def openmirror_plan_run(
        self,
        mirror: MirrorConfig,
        target_relation: Any,
        key_columns: List[str],
        state: TableFolderState,
        snapshot: Optional[SnapshotRecord],
        full_refresh: bool,
        previous_columns: Optional[Sequence[Any]],
        current_columns: Sequence[Any],
    ) -> RunPlan:
        plan = plan_run(
            self._destination(mirror, target_relation), key_columns, state, snapshot, full_refresh,
            _column_specs(previous_columns) if previous_columns is not None else None,
            _column_specs(current_columns), mirror.on_schema_change,
        )
        if plan.unexpected:
            action = "rebuilding" if plan.mode == REBUILD else "loading in full"
            self._warn(f"Model '{mirror.model}': {action} {mirror.table_folder}: {plan.reason}")
        for published, spelled in plan.schema.respelled:
            self._warn(
                f"Model '{mirror.model}': column '{spelled}' is published as '{published}', the "
                "spelling the mirrored table has (column names are case-insensitive there and a "
                "table holds one spelling); on_schema_change='sync_all_columns' rebuilds the table "
                "to take the new spelling"
            )
        return plan

    # -- staging: Spark writes the change rows ----------------------------------------------------

    @available
    def openmirror_change_sql(
        self,
        mirror: MirrorConfig,
        plan: RunPlan,
        key_columns: List[str],
        snapshot: Optional[SnapshotRecord],
        relations: Dict[str, Any],
        output_rows: int,
    ) -> Dict[str, Any]:
        """The change rows' select, how many writer tasks write them and whether the rows are
        shuffled to them (see `openmirror_write_files_sql`), after the key check.

        `relations`: `new` (the output), `previous` (the snapshot), `new_hashes`,
        `previous_hashes` and `changes` (the changed keys of this run).
        """
        with self._sorted_bucket_scans():
            new, previous = str(relations["new"]), str(relations["previous"])
            if plan.mode != INCREMENTAL:
                self._check_keys(mirror, relations["new_hashes"], key_columns, counted=False)
                self._warn_key_lookalikes(mirror, plan, key_columns, relations["new_hashes"])
                sql = self._sql(
                    "openmirror_initial_load_sql", relation=new, columns=plan.schema.columns, kept=plan.schema.kept,
                    change_markers=mirror.change_markers, position=mirror.row_marker_position,
                )
                writers = hash_diff.writer_count(output_rows, mirror.max_rows_per_file)
                return {"sql": sql, "writers": writers, "shuffle": False}
            hashed = hash_diff.hashed_columns(plan.schema, key_columns)
            signature = self._sql("openmirror_hash_signature", hashed=hashed)
            if not self._hashes_match(relations["previous_hashes"], snapshot, signature):
                logger.debug(f"Model '{mirror.model}': no key hashes match the snapshot; comparing whole rows")
                self._check_keys(mirror, relations["new_hashes"], key_columns, counted=False)
                self._warn_key_lookalikes(mirror, plan, key_columns, relations["new_hashes"])
                sql = self._sql(
                    "openmirror_change_rows_sql", new_relation=new, previous_relation=previous,
                    columns=plan.schema.columns, kept=plan.schema.kept, added=plan.schema.added,
                    key_columns=key_columns, change_markers=mirror.change_markers,
                    position=mirror.row_marker_position,
                )
                return {"sql": sql, "writers": 1, "shuffle": True}
            changes = relations["changes"]
            self.drop_relation(changes)
            self.execute(self._sql(
                "openmirror_changed_keys_sql", target=str(changes), new_hashes=str(relations["new_hashes"]),
                previous_hashes=str(relations["previous_hashes"]), key_columns=key_columns,
                change_markers=mirror.change_markers,
            ))
            self.cache_added(changes)
            self._check_keys(mirror, changes, key_columns, counted=True)
            self._warn_key_lookalikes(mirror, plan, key_columns, relations["new_hashes"], new_keys=changes)
            sql = self._sql(
                "openmirror_changed_rows_sql", new_relation=new, changes=str(changes), columns=plan.schema.columns,
                kept=plan.schema.kept, key_columns=key_columns, change_markers=mirror.change_markers,
                position=mirror.row_marker_position,
            )
            writers = hash_diff.writer_count(self._row_count(changes), mirror.max_rows_per_file)
            return {"sql": sql, "writers": writers, "shuffle": True}

    @contextmanager
    def _sorted_bucket_scans(self):
        """Spark reads the sorted key hashes buckets as sorted while the diff's statements run, and
        then no longer (see macros/sql/hash_diff.sql), also when the key check fails."""
        self.execute(self._sql("openmirror_sorted_bucket_scans_sql", on=True))
        try:
            yield
        finally:
            self.execute(self._sql("openmirror_sorted_bucket_scans_sql", on=False))

    def _row_count(self, relation: Any) -> int:
        _, rows = self.execute(self._sql("openmirror_row_count_sql", relation=str(relation)), fetch=True)
        return int(rows[0][0])

    def _hashes_match(self, hashes: Any, snapshot: Optional[SnapshotRecord], signature: str) -> bool:
        """The snapshot's key hashes are usable when the run that wrote the snapshot wrote them too,
        over the same columns. A crash between the two renames leaves them behind: then not."""
        if snapshot is None or snapshot.run_id is None:
            return False
        self._refresh_cached_relations([hashes])
        if self.get_relation(hashes.database, hashes.schema, hashes.identifier) is None:
            return False
        _, rows = self.execute(f"show tblproperties {hashes}", fetch=True)
        properties = {str(row[0]): str(row[1]) for row in rows}
        return (
            properties.get(hash_diff.HASHES_RUN_ID) == snapshot.run_id
            and properties.get(hash_diff.HASHES_COLUMNS) == signature
        )

    @available
    def openmirror_drop_ignored_columns(self, relation: Any, plan: RunPlan) -> None:
        """With on_schema_change='ignore' the snapshot keeps only the published columns."""
        if not plan.schema.ignored:
            return
        ignored = {c.name.lower() for c in plan.schema.ignored}
        columns = [c for c in self.get_columns_in_relation(relation) if c.column.lower() not in ignored]
        projected = relation.incorporate(path={"identifier": f"{relation.identifier}__om_projected"})
        self.drop_relation(projected)
        self.execute(self._sql(
            "openmirror_project_columns_sql", target=str(projected), source=str(relation),
            columns=[c.column for c in columns],
        ))
        self.drop_relation(relation)
        self.rename_relation(projected, relation)

    def staging_mode(self) -> str:
        """direct or upload (staging.py), decided once per invocation."""
        with self._staging_lock:
            if self._staging_mode is None:
                self._staging_mode = choose_mode(
                    self.config.credentials.spark_staging, self.landing_zone.shared_with_spark,
                    self._spark_master, self._spark_can_write_landing_zone,
                )
                logger.info(f"Spark stages change files with spark_staging={self._staging_mode}")
            return self._staging_mode

    def _spark_master(self) -> Optional[str]:
        _, rows = self.execute("set spark.master", fetch=True)
        return str(rows[0][1]) if rows else None

    def _spark_can_write_landing_zone(self) -> bool:
        probe = f"{STAGING_ROOT}/probe-{uuid.uuid4().hex}"
        uri = self.landing_zone.spark_uri(probe)
        try:
            self.execute(self._sql(
                "openmirror_write_files_sql", uri=uri, select_sql="select 1 as probe", compression="snappy",
                max_rows_per_file=None, writers=1, shuffle=False,
            ))
        except Exception as exc:  # any failure means: let the adapter upload instead
            logger.info(
                f"Spark cannot write {self.landing_zone.location} itself ({type(exc).__name__}); "
                "change files are uploaded by the adapter"
            )
            return False
        finally:
            try:
                self.landing_zone.delete_folder(probe)
            except Exception as exc:  # a leftover probe in _scratchPad is harmless
                logger.debug(f"could not delete the staging probe {probe}: {exc}")
        return True

    def _check_not_interrupted(self) -> None:
        """dbt cancelled the run (Ctrl-C) while this model ran: it writes nothing more."""
        if self.connections.interrupted.is_set():
            raise RunInterruptedError("interrupted: nothing published")

    @available
    def openmirror_staging(self, run_id: str) -> Dict[str, Optional[str]]:
        self._check_not_interrupted()
        staging = start_staging(self.landing_zone, scratch_path(run_id), self.staging_mode())
        with self._leases_lock:
            self._local_staging.setdefault(threading.get_ident(), []).append(staging)
        return asdict(staging)

    @available
    def openmirror_land_staged_files(self, staging: Dict[str, Optional[str]]) -> None:
        """Upload mode: the staged files go into the landing zone's _scratchPad before anything
        refers to them; direct mode: nothing to do."""
        land_staged_files(self.landing_zone, Staging(**staging))

    @available
    def openmirror_write_sql(self, mirror: MirrorConfig, uri: str, change: Dict[str, Any]) -> str:
        return self._sql(
            "openmirror_write_files_sql", uri=uri, select_sql=change["sql"], compression=mirror.parquet_compression,
            max_rows_per_file=mirror.max_rows_per_file, writers=change["writers"], shuffle=change["shuffle"],
        )

    @available
    def openmirror_marker_counts(self, mirror: MirrorConfig, plan: RunPlan, uri: str) -> Dict[int, int]:
        _, rows = self.execute(self._sql(
            "openmirror_marker_counts_sql", uri=uri, full_load=plan.mode != INCREMENTAL,
            change_markers=mirror.change_markers,
        ), fetch=True)
        return {int(row[0]): int(row[1]) for row in rows}

    # -- publishing ---------------------------------------------------------------------------

    @available
    def openmirror_prepare(
        self,
        mirror: MirrorConfig,
        plan: RunPlan,
        staging: Dict[str, str],
        state: TableFolderState,
        counts: Dict[int, int],
        run_id: str,
        target_relation: Any,
    ) -> PendingPublish:
        """Which staged file becomes which number; nothing is published yet."""
        try:
            return self.publisher.prepare(
                mirror.table_folder, plan.key_columns, staging["path"], state, sum(counts.values()),
                mirror.model, run_id, full_load=plan.mode != INCREMENTAL, rebuild=plan.mode == REBUILD,
                owner=str(target_relation),
            )
        except Exception:
            self.publisher.discard(staging["path"])
            raise

    @available
    def openmirror_publish(
        self, mirror: MirrorConfig, pending: PendingPublish, relations: Dict[str, Any],
    ) -> PublishedFiles:
        """Journal, rename into place, make the output the snapshot, commit.

        `relations`: `new`, `target`, `backup`, `new_hashes`, `previous_hashes`, `changes`.

        A failure before the journal entry discards the staged files; after it, everything is left
        for the next run's recovery to finish (see recovery.py).
        """
        fence = self.leases.fence(self._held_lease(mirror))
        try:
            self._check_not_interrupted()
            fence.check()
            self.publisher.begin(pending, fence, mirror.rebuild_wait_seconds)
        except Exception:
            self.publisher.discard(pending.staged_folder)
            raise
        self.publisher.complete(pending, fence)
        fence.check()  # Spark's renames cannot be conditional: the last check before them
        self._replace_snapshot(relations["new"], relations["target"], relations["backup"])
        self._replace_hashes(relations["new_hashes"], relations["previous_hashes"], relations["changes"])
        self.publisher.commit(pending, fence)
        return PublishedFiles(pending.names, pending.rows, pending.last_sequence_number)

    # -- runs that publish nothing: --empty, and dry runs -----------------------------------------

    @available
    def openmirror_is_dry_run(self, value: Any) -> bool:
        """`--vars '{openmirror_dry_run: true}'`: report what would be published, write nothing."""
        return is_set(value)

    @available
    def openmirror_check_empty_run(
        self, mirror: MirrorConfig, new_columns: Sequence[Any], previous_columns: Optional[Sequence[Any]]
    ) -> OpenMirrorResponse:
        """`dbt run --empty` builds the model with no rows: its columns and key are checked as a
        run would check them, and nothing is published (an empty output would delete every row)."""
        self.openmirror_key_columns(mirror, new_columns)
        plan_schema(
            mirror.model, _column_specs(previous_columns) if previous_columns is not None else None,
            _column_specs(new_columns), mirror.on_schema_change,
        )
        return OpenMirrorResponse(
            _message=f"--empty: columns and unique_key checked, nothing published to {mirror.table_folder}",
            code="OPEN_MIRROR", table_folder=mirror.table_folder, mode="empty",
        )

    @available
    def openmirror_dry_run(
        self, mirror: MirrorConfig, plan: RunPlan, state: TableFolderState, change: Dict[str, Any],
    ) -> OpenMirrorResponse:
        """What a run would publish now: rows per marker, the table folder and the file numbers;
        nothing is written to the landing zone (the file count is an estimate when a change is
        split over several files)."""
        full_load = plan.mode != INCREMENTAL
        source = f"({change['sql']}) change_rows"
        _, rows = self.execute(self._sql(
            "openmirror_count_markers_sql", source=source, full_load=full_load, change_markers=mirror.change_markers,
        ), fetch=True)
        counts = {int(row[0]): int(row[1]) for row in rows}
        files = hash_diff.file_count(sum(counts.values()), change["writers"], mirror.max_rows_per_file, full_load)
        first = 1 if full_load else state.last_sequence_number + 1
        names = [data_file_name(n) for n in range(first, first + files)]
        response = publish_response(counts, names, mirror.table_folder, plan.mode, list(self._warnings()))
        notes = [f"{plan.mode}: {plan.reason}"] if plan.reason else []
        if state.pending is not None:
            notes.append(f"an interrupted publish of run {state.pending.run_id} would be finished or discarded first")
        detail = f" ({'; '.join(notes)})" if notes else ""
        response._message = f"dry run, nothing written: {describe_change(counts, names, mirror.table_folder)}{detail}"
        response.mode = f"dry run: {plan.mode}"
        return response

    # -- write-audit-publish: changes held for their models' tests ------------------------------

    @available
    def openmirror_check_audit_hook(self, mirror: MirrorConfig, graph: Mapping[str, Any]) -> None:
        """publish='after_tests' needs the project's on-run-end hook, which publishes held changes."""
        if mirror.publish == AFTER_TESTS and hook_configured(graph.get("nodes", {})) is None:
            raise MirrorConfigError(
                f"Model '{mirror.model}': publish='after_tests' holds the change until the model's "
                f"tests passed, which is decided at the end of the invocation: add "
                f"on-run-end: [\"{{{{ {AUDIT_HOOK_MACRO}(results) }}}}\"] to dbt_project.yml. "
                "Nothing was published."
            )

    @available
    def openmirror_hold_for_audit(
        self, mirror: MirrorConfig, pending: PendingPublish, relations: Dict[str, Any], model_id: str
    ) -> PublishedFiles:
        """The output becomes `{{ this }}` for the tests while the published snapshot and its key
        hashes wait beside it; the staged files and the lease stay until the invocation's end."""
        target, hashes = relations["target"], relations["previous_hashes"]
        base, base_hashes = _beside(target, AUDIT_BASE), _beside(target, AUDIT_BASE_HASHES)
        self._refresh_cached_relations([target, hashes, base, base_hashes])
        for kept, aside, fresh in ((target, base, relations["new"]), (hashes, base_hashes, relations["new_hashes"])):
            self.drop_relation(aside)
            existing = self.get_relation(kept.database, kept.schema, kept.identifier)
            if existing is not None:
                self.rename_relation(existing, aside)
            self.rename_relation(fresh, kept)
        self.drop_relation(relations["changes"])
        lease, heartbeat = self._take_lease(mirror)
        self._held.append(HeldChange(model_id, mirror, pending, target, hashes, lease, heartbeat))
        return PublishedFiles(pending.names, pending.rows, pending.last_sequence_number)

    @available
    def openmirror_finish_audits(self, results: Sequence[Any], graph: Mapping[str, Any]) -> List[str]:
        """At the invocation's end: publish each held change whose tests passed, discard the
        others (their snapshot goes back). One table's failure does not stop the others; the
        first is raised at the end."""
        lines, failures = [], []
        held, self._held = self._held, []
        for change in held:
            decided = verdict(change.model_id, graph.get("nodes", {}), results)
            where = f"{change.mirror.table_folder} ({len(change.pending.files)} files, run {change.pending.run_id})"
            try:
                if decided.publish:
                    self._publish_held(change)
                    lines.append(f"Model '{change.mirror.model}': published {where}: {decided.reason}")
                else:
                    self._discard_held(change)
                    lines.append(f"Model '{change.mirror.model}': not published, {where} discarded: {decided.reason}")
                    warn(lines[-1])
            except Exception as exc:
                failures.append(exc)
                logger.error(f"Model '{change.mirror.model}': {where}: {getattr(exc, 'msg', exc)}")
            finally:
                change.heartbeat.stop()
                try:
                    self.leases.release(change.lease)
                except Exception as exc:  # it expires on its own
                    logger.warning(f"could not release the lease on {change.lease.table_folder}: {exc}")
        if failures:
            raise failures[0]
        return lines

    def _publish_held(self, change: HeldChange) -> None:
        """As openmirror_publish, with `{{ this }}` already the output: a failure before the
        journal entry discards the change; after it, recovery finishes the publish."""
        fence = self.leases.fence(change.lease)
        try:
            fence.check()
            self.publisher.begin(change.pending, fence, change.mirror.rebuild_wait_seconds)
        except Exception:
            self._discard_held(change)
            raise
        self.publisher.complete(change.pending, fence)
        self.publisher.commit(change.pending, fence)
        self._release_audit_base(change.target)

    def _discard_held(self, change: HeldChange) -> None:
        self.publisher.discard(change.pending.staged_folder)
        self._restore_audit_base(change.target)

    def _restore_audit_base(self, target: Any) -> None:
        """The snapshot and key hashes a held change was diffed against go back in place (on a
        first publish there were none: the table goes, and the next run is a first publish again)."""
        hashes = _beside(target, "__om_hashes")
        for kept, aside in ((target, _beside(target, AUDIT_BASE)), (hashes, _beside(target, AUDIT_BASE_HASHES))):
            self._refresh_cached_relations([kept, aside])
            self.drop_relation(kept)
            existing = self.get_relation(aside.database, aside.schema, aside.identifier)
            if existing is not None:
                self.rename_relation(existing, kept)

    def _release_audit_base(self, target: Any) -> None:
        """The held change is published: `{{ this }}` is an ordinary snapshot, the old one goes."""
        self.execute(self._sql("openmirror_unset_properties_sql", relation=str(target), keys=[SNAPSHOT_HELD]))
        for suffix in (AUDIT_BASE, AUDIT_BASE_HASHES):
            self.drop_relation(_beside(target, suffix))

    @available
    def openmirror_keep_columns_sql(self, relation: Any, plan: RunPlan) -> str:
        return self._sql("openmirror_keep_columns_sql", relation=str(relation), kept=plan.schema.kept)

    @available
    def openmirror_response(
        self, mirror: MirrorConfig, plan: RunPlan, counts: Dict[int, int], files: List[str]
    ) -> OpenMirrorResponse:
        response = publish_response(counts, files, mirror.table_folder, plan.mode, list(self._warnings()))
        if mirror.publish == AFTER_TESTS:
            response._message = f"held: {response._message}, published after its tests pass"
        return response

"""One model's publish, from plan to snapshot: the orchestrator the `open_mirror`
materialization drives.

The materialization compiles the model, runs its hooks, keeps dbt's relation cache and returns
its relations; it calls this class three times:
- `prepare()`: the lease on the table folder, and what an interrupted run left finished;
- (the materialization builds the model output as `relations.new_output`)
- `publish(existing)`: check the output's keys, plan the run, diff against the snapshot, stage
  the change rows as Parquet, publish them (or hold them for the model's tests) and make the
  output the snapshot; or, for `--empty`, `--sample` and dry runs, check and report only.
Every statement goes through `Statements` (the macros of macros/sql/) and every relation through
`Catalog`, so the unit tests run each branch against a fake warehouse.
"""

from collections.abc import Callable, Collection, Sequence
from functools import partial
from typing import Any, Final, cast

from dbt.adapters.openmirror.errors import LandingZoneConfigError, PublishError, RunInterruptedError
from dbt.adapters.openmirror.planning import hash_diff
from dbt.adapters.openmirror.planning.candidates import candidate_runs_after, delete_flag_column
from dbt.adapters.openmirror.planning.hash_diff import HASHES_COLUMNS
from dbt.adapters.openmirror.planning.keys import check_key_types, raise_key_problems, resolve_key_columns
from dbt.adapters.openmirror.planning.overlay import (
    IN_BASE,
    OVERLAY_FORMAT,
    OVERLAY_FORMAT_VERSION,
    OVERLAY_SLOTS,
    base_run_id,
    free_slot,
    overlay_refusal,
)
from dbt.adapters.openmirror.planning.run_plan import (
    INCREMENTAL,
    REBUILD,
    SNAPSHOT_CANDIDATE_RUNS,
    Destination,
    RunPlan,
    SnapshotRecord,
    left_behind,
    plan_run,
    snapshot_properties,
)
from dbt.adapters.openmirror.planning.schema_plan import (
    ColumnSpec,
    check_candidate_types,
    check_output_columns,
    plan_schema,
)
from dbt.adapters.openmirror.publishing.lease import Heartbeat, Lease
from dbt.adapters.openmirror.publishing.publisher import PendingPublish, PublishedFiles, TableFolderState
from dbt.adapters.openmirror.publishing.recovery import Recovery
from dbt.adapters.openmirror.publishing.sequence import CrashedRunOutput, PublishSequence
from dbt.adapters.openmirror.publishing.staging import Staging, discard_local, land_staged_files, start_staging
from dbt.adapters.openmirror.rules.landing_zone import data_file_name, scratch_path
from dbt.adapters.openmirror.rules.markers import DELETE
from dbt.adapters.openmirror.run.config import AFTER_TESTS, IGNORE, MirrorConfig
from dbt.adapters.openmirror.run.context import RunContext
from dbt.adapters.openmirror.run.diff import ChangeRows, SnapshotDiff
from dbt.adapters.openmirror.run.folder_repair import repair_table_folders
from dbt.adapters.openmirror.run.held_changes import HeldChange, HeldChanges
from dbt.adapters.openmirror.run.overlay import (
    Candidates,
    OverlayRecord,
    SnapshotOverlay,
    drop_stale_layers,
    model_columns,
    usable_snapshot,
)
from dbt.adapters.openmirror.run.relations import RunRelations
from dbt.adapters.openmirror.run.response import (
    OpenMirrorResponse,
    describe_change,
    empty_output_warning,
    publish_response,
)
from dbt.adapters.openmirror.run.statements import marker_counts, recorded_snapshot, row_count, table_properties
from dbt.adapters.openmirror.spark.metastore_limits import VIEW_TEXT_LIMIT
from dbt.adapters.openmirror.spark.model_inputs import ModelInputs
from dbt.adapters.openmirror.spark.parquet_writes import PARQUET_WRITE_SETTINGS

#: A record not read yet (None is a read that found none).
_UNREAD: Final = object()


class MirrorRun:
    def __init__(
        self,
        context: RunContext,
        held: HeldChanges,
        mirror: MirrorConfig,
        this: Any,
        run_id: str,
        model_id: str,
        full_refresh: bool,
        dry_run: bool,
        partial_output: str | None,
        candidates: bool = False,
        report_only_because: str | None = None,
        project_relations: Collection[str] = (),
    ) -> None:
        self.context = context
        self.held = held
        self.mirror = mirror
        self.run_id = run_id
        self.model_id = model_id
        self.full_refresh = full_refresh
        self.dry_run = dry_run
        #: Why the invocation builds only part of the rows (`--empty`, `--sample`): checked, not published.
        self.partial_output = partial_output
        #: The model selected only candidate rows (its `is_incremental()` was true).
        self.candidates = candidates
        #: The relations (`schema.alias`) the project's models build: table folders they own are
        #: not left behind by this one.
        self.project_relations = project_relations
        self.relations = RunRelations.of(this, self.publishes)
        #: What the run warned about: logged as it happens, reported with its result.
        self.warnings: list[str] = []
        if report_only_because is not None:  # a dry run the user did not ask for says why
            self._warn(f"Model '{mirror.model}': {report_only_because}")
        self._lease: Lease | None = None
        self._heartbeat: Heartbeat | None = None
        self._staging: list[Staging] = []
        #: What the model read (spark/model_inputs.py), recorded with the snapshot a full run makes,
        #: and how to read it again once the output is built (both None without a digest).
        self._inputs_digest: str | None = None
        self._read_inputs: Callable[[], ModelInputs] | None = None
        #: The model read what its snapshot was built from: nothing was built, nothing is published.
        self._unchanged: OpenMirrorResponse | None = None
        #: How the model's rows were built (`builds_output_view`).
        self._rows_built_as_view = False
        #: `{{ this }}`'s record as the run found it once recovered (read once: while the run holds
        #: the lease only the run itself changes it); `_UNREAD` until then.
        self._found_record: SnapshotRecord | None | object = _UNREAD

    @property
    def publishes(self) -> bool:
        return not (self.dry_run or self.partial_output)

    def _warn(self, message: str) -> None:
        """A rebuild, a full reload, a recovery or a takeover is never silent."""
        self.context.warn(message)
        self.warnings.append(message)

    # -- entry points --------------------------------------------------------------------------

    def prepare(self) -> None:
        """One run publishes a table at a time; it first finishes what an interrupted run left:
        the folders of the tables it writes, then (a publishing run) the publish."""
        if self.publishes:
            self._acquire_lease()
        catalog = self.context.catalog
        catalog.refresh([*self.relations.written(), *self.relations.read_only()])
        folders = self.context.table_folders()
        if folders is not None:
            repair_table_folders(folders, catalog, self.mirror.model, self.relations, self._warn, self.context.info)
        if self.publishes:
            self._recover()

    def inputs_unchanged(self, existing: Any | None, compiled_sql: str, definition: str, reconcile: bool) -> bool:
        """Before the output is built: whether the model reads exactly what its snapshot was built
        from (spark/model_inputs.py), so that its output would be the snapshot again and the run
        publishes nothing without building or comparing it. `definition` is the rest of the
        model as dbt knows it (config, columns). Only a publishing full-diff run
        whose table folder still ends where the snapshot does; `--full-refresh`, a reconcile run
        and `skip_unchanged_inputs=false` always build."""
        mirror = self.mirror
        if not (self.publishes and mirror.skip_unchanged_inputs) or self.candidates:
            return False
        read = partial(self.context.model_inputs, compiled_sql, [definition, repr(mirror)])
        inputs = read()
        if inputs.digest is None:
            self.context.debug(f"Model '{mirror.model}': building, its inputs cannot be compared: {inputs.reason}")
            return False
        self._inputs_digest, self._read_inputs = inputs.digest, read
        if self.full_refresh or reconcile or existing is None or existing.type != "table":
            return False
        snapshot = self._snapshot_found(existing)
        if snapshot is None or not snapshot.built_from(inputs.digest):
            return False
        state = self.context.publisher.table_state(mirror.table_folder)
        columns = self.context.catalog.columns(existing)
        key_columns = self._resolve_keys(columns)
        destination = self._destination(str(self.relations.target))
        plan = plan_run(destination, key_columns, state, snapshot, False, columns, columns, mirror.on_schema_change)
        if plan.mode != INCREMENTAL:
            return False
        self._unchanged = publish_response({}, [], mirror.table_folder, plan.mode, list(self.warnings))
        self._unchanged._message = f"inputs unchanged since run {snapshot.run_id}: {self._unchanged._message}"
        return True

    def publish(self, existing: Any | None) -> OpenMirrorResponse:
        """The model output is built as `relations.new_output`; `existing` is `{{ this }}` as
        dbt's cache knows it (None on a first run)."""
        if self._unchanged is not None:
            self.release_lease()
            return self._unchanged
        self._confirm_inputs()
        relations, catalog = self.relations, self.context.catalog
        snapshot = self._snapshot_found(existing)
        previous_columns = catalog.columns(existing) if existing is not None else None
        state: TableFolderState | None = None  # read once, by whichever way the run takes first
        # The model's rows, when the complete output is written from them (not built as it).
        rows: Candidates | None = None
        if self.candidates or self.mirror.delete_flag:
            rows = self._select_candidates(existing, snapshot)
            if self.partial_output:
                return self._check_partial(existing, rows, previous_columns)
            if self.candidates and previous_columns is not None:
                check_candidate_types(self.mirror.model, previous_columns, rows.published_columns)
            if self._overlays(snapshot) and existing is not None and snapshot is not None:
                state = self.context.publisher.table_state(self.mirror.table_folder)
                overlay = SnapshotOverlay(self._diff(), snapshot, existing)
                response = self._publish_overlay(overlay, rows, previous_columns, state)
                if response is not None:
                    return response
        elif self.writes_output_from_rows:
            rows = self._model_rows()
        if self.partial_output:
            return self._check_partial(existing, None, previous_columns)
        new_columns = rows.published_columns if rows is not None else catalog.columns(relations.new_output)
        model_keys = self._key_columns(new_columns)
        if state is None:
            state = self.context.publisher.table_state(self.mirror.table_folder)
        plan = self._plan(model_keys, state, snapshot, previous_columns, new_columns)
        if rows is not None:
            self._complete_output(existing, rows, previous_columns, plan.schema.ignored)
        diff = self._diff()
        output_rows = diff.key_hashes(plan)
        change = diff.change_rows(plan, snapshot, existing, output_rows)
        if output_rows == 0 and plan.mode == INCREMENTAL and self._deletes_rows(change, existing):
            self._warn(empty_output_warning(self.mirror.model, self.mirror.table_folder))
        if self.dry_run:
            response = self._report_dry_run(plan, state, change)
            for relation in (relations.new_output, relations.new_hashes, relations.changes):
                catalog.drop(relation)
            return response
        candidate_runs = candidate_runs_after(snapshot, self.candidates)
        return self._stage_and_publish(
            plan, state, change, relations.new_output, output_rows, candidate_runs, self._make_snapshot
        )

    def _deletes_rows(self, change: ChangeRows, existing: Any | None) -> bool:
        """Whether a change whose output is empty deletes rows: its counted deletes, or (not
        counted yet) whether the snapshot holds any."""
        if change.markers is not None:
            return change.markers.get(DELETE, 0) > 0
        return existing is not None and row_count(self.context.statements, existing) > 0

    def _confirm_inputs(self) -> None:
        """The digest taken before the build is recorded only if the inputs are the same after it:
        a source changed while the model was built (and changed back before a later run) must not
        let that run skip."""
        if self._read_inputs is not None and self._read_inputs().digest != self._inputs_digest:
            self.context.debug(f"Model '{self.mirror.model}': its inputs changed while it was built; not recorded")
            self._inputs_digest = None

    def _diff(self) -> SnapshotDiff:
        return SnapshotDiff(
            self.context.statements,
            self.context.catalog,
            self.mirror,
            self.relations,
            self.run_id,
            self._warn,
            self.context.debug,
        )

    def _stage_and_publish(
        self,
        plan: RunPlan,
        state: TableFolderState,
        change: ChangeRows,
        output: Any,
        complete_rows: int | None,
        candidate_runs: int,
        make_snapshot: Callable[[], None],
        overlay: OverlayRecord | None = None,
    ) -> OpenMirrorResponse:
        """Stage the change rows, record `output` as the snapshot it will be (`complete_rows`: the
        rows of its complete table, itself or the base it overlays), and publish (or hold the
        change for the model's tests)."""
        staging = self._start_staging()
        try:
            counts: dict[int, int] = {}
            # No changed keys: no row to read back, unless a zero-row file adds the model's new columns.
            if plan.mode != INCREMENTAL or change.rows != 0 or plan.schema.added:
                self._write_change_files(staging, change)
                counts = change.markers if change.markers is not None else self._marker_counts(plan, staging)
                land_staged_files(self.context.storage, staging)
            pending = self._prepare_publish(plan, staging, state, counts)
            self._record_snapshot(plan, pending, candidate_runs, output, complete_rows, overlay)
        except BaseException:  # also dbt cancelling the run: nothing journals these files, nobody would find them
            self._discard_staged(staging)
            raise
        if self.mirror.publish == AFTER_TESTS:
            published = self._hold(pending)
        else:
            published = self._publish(pending, make_snapshot)
            self.release_lease()
        return self._response(plan, counts, published.names)

    def _overlays(self, snapshot: SnapshotRecord | None) -> bool:
        """Whether this run may overlay its snapshot rather than merge into a complete table
        (planning/overlay.py then decides from the data): a publishing candidate run whose change
        is not held for its tests."""
        return self.candidates and self.publishes and self.mirror.publish != AFTER_TESTS and snapshot is not None

    def _publish_overlay(
        self,
        overlay: SnapshotOverlay,
        candidates: Candidates,
        previous_columns: list[ColumnSpec] | None,
        state: TableFolderState,
    ) -> OpenMirrorResponse | None:
        """A candidate run at the cost of its candidates: the snapshot stays the base of a view,
        the candidates go into the overlay (planning/overlay.py). None, with nothing changed, when
        the run must merge into a complete table instead."""
        snapshot = overlay.snapshot
        columns = candidates.published_columns
        plan = plan_run(
            self._destination(str(self.relations.target)),
            candidates.key_columns,
            state,
            snapshot,
            self.full_refresh,
            previous_columns,
            columns,
            self.mirror.on_schema_change,
        )
        signature = overlay.diff.signature(plan)
        facts = overlay.facts(plan, candidates, signature)
        refusal = overlay_refusal(facts)
        if refusal is not None:
            self.context.debug(f"Model '{self.mirror.model}': merging the candidates into a complete table: {refusal}")
            return None
        self._warn_respelled(plan)
        if facts.candidate_rows == 0:
            return self._count_run_without_change(overlay, candidates, plan)
        self._key_columns(columns)
        markers = overlay.changed_keys(plan, candidates)
        if not markers:
            return self._count_run_without_change(overlay, candidates, plan)
        slot = free_slot(snapshot)
        target = self.relations.overlay(slot)
        change = overlay.change_rows(plan, candidates, target, markers)
        return self._stage_and_publish(
            plan,
            state,
            change,
            target,
            facts.base_rows,
            candidate_runs_after(snapshot, True),
            lambda: self._promote_overlay(slot, plan.key_columns),
            OverlayRecord(base_run_id(snapshot) or "", slot, signature),
        )

    def _count_run_without_change(
        self, overlay: SnapshotOverlay, candidates: Candidates, plan: RunPlan
    ) -> OpenMirrorResponse:
        """A candidate run that selected no row, or only rows as published, has nothing to
        publish, and the snapshot is already the complete output: the landing zone, the
        snapshot's tables and its view stay as they are (rewriting the overlay would cost as much
        as a run with changes). Its record only counts the run, because `reconcile_every` counts
        runs."""
        catalog = self.context.catalog
        catalog.drop(candidates.relation)
        catalog.drop(self.relations.changes)
        self.context.statements.execute(
            "openmirror_snapshot_record_sql",
            relation=str(overlay.existing),
            properties={SNAPSHOT_CANDIDATE_RUNS: str(candidate_runs_after(overlay.snapshot, True))},
            kind=overlay.existing.type,
        )
        self.release_lease()
        return self._response(plan, {}, [])

    @property
    def writes_output_from_rows(self) -> bool:
        """The complete output is written from the model's rows, not built as it: a publishing
        run in full of a `delete_flag` model (its keys are checked on the rows, then the flagged
        rows and the flag left out), or of an `on_schema_change='ignore'` model (the columns its
        snapshot does not keep left out)."""
        ignores = self.mirror.on_schema_change == IGNORE
        return self.publishes and not self.candidates and (self.mirror.delete_flag is not None or ignores)

    def builds_output_view(self, model_sql: str) -> bool:
        """Whether the model's rows are built as a view (read once, to write the complete output)
        rather than as a table: where the output is written from them, unless the model's SQL is
        longer than a metastore may keep as a view's text (spark/metastore_limits.py)."""
        self._rows_built_as_view = self.writes_output_from_rows and len(model_sql) <= VIEW_TEXT_LIMIT
        return self._rows_built_as_view

    def is_snapshot(self, relation: Any) -> bool:
        """Whether `relation`, found under the model's name, can be its snapshot (run/overlay.py:
        `usable_snapshot`). Anything else is replaced."""
        record = self._snapshot_found(relation) if relation.type == "view" else None
        return usable_snapshot(self.context.catalog, relation, record)

    def snapshot_relation(self) -> Any:
        """`{{ this }}` as the run left it: a table, or an overlaid snapshot's view."""
        return self.context.catalog.find(self.relations.target) or self.relations.target

    def close(self) -> None:
        """The model ended (also when it failed): its lease, local staging folders and leftover
        work tables go."""
        self.release_lease()
        staged, self._staging = self._staging, []
        for staging in staged:
            discard_local(staging)
        self._drop_leftovers()

    def _drop_leftovers(self) -> None:
        """A run that failed leaves what it built so far. The rows the model selected are never
        needed once the run ended, and nothing a run that publishes nothing built is (its names
        are its own, so no publishing run would ever drop them); the output and key hashes of a
        publishing run stay for recovery. Only tables dbt's cache knows are dropped: no statement
        runs when there are none."""
        relations, catalog = self.relations, self.context.catalog
        leftovers = [relations.model_output]
        if not self.publishes:
            leftovers += [relations.new_output, relations.new_hashes, relations.changes]
        for relation in leftovers:
            try:
                found = catalog.find(relation)
                if found is not None:
                    catalog.drop(found)
            except Exception as exc:  # the run's own outcome matters more; a later run drops it
                self.context.debug(f"Model '{self.mirror.model}': could not drop {relation}: {exc}")

    # -- one publisher per table: lease and recovery ---------------------------------------------

    def _acquire_lease(self) -> None:
        mirror, leases = self.mirror, self.context.leases
        lease = leases.acquire(
            mirror.table_folder,
            self.run_id,
            mirror.model,
            mirror.lease_ttl_seconds,
            mirror.lease_wait_seconds,
        )
        self._lease = lease
        notice = lease.takeover_notice()
        if notice is not None:
            self._warn(f"Model '{mirror.model}': {notice}")
        self._heartbeat = Heartbeat(
            leases,
            lease,
            mirror.lease_ttl_seconds,
            lambda exc: self.context.warning(f"Model '{mirror.model}': could not renew its lease: {exc}"),
        )

    def _held_lease(self) -> Lease:
        if self._lease is None:
            raise LandingZoneConfigError(f"Model '{self.mirror.model}': publishing without a lease")
        return self._lease

    def release_lease(self) -> None:
        lease, heartbeat = self._lease, self._heartbeat
        self._lease, self._heartbeat = None, None
        if heartbeat is not None:
            heartbeat.stop()
        if lease is not None:
            try:
                self.context.leases.release(lease)
            except Exception as exc:  # it expires on its own; the run's own error matters more
                self.context.warning(f"could not release the lease on {lease.table_folder}: {exc}")

    def _recover(self) -> None:
        """Finish or discard a publish an interrupted run left journaled, and its leftovers."""
        lease, relations, mirror = self._held_lease(), self.relations, self.mirror
        promote: list[Callable[[], None]] = [self._replace_snapshot]

        def crashed_output(pending: PendingPublish) -> CrashedRunOutput:
            output_run_id = self._run_id_of(relations.new_output)
            for slot in OVERLAY_SLOTS:
                if output_run_id != pending.run_id and self._run_id_of(relations.overlay(slot)) == pending.run_id:
                    output_run_id = pending.run_id
                    promote[0] = partial(self._promote_overlay, slot, pending.key_columns)
            return CrashedRunOutput(self._run_id_of(relations.target), output_run_id)

        def report(recovery: Recovery) -> None:
            self._warn(f"Model '{mirror.model}': recovering {mirror.table_folder}: {recovery.message}")

        sequence = PublishSequence(self.context.publisher, self.context.leases.fence(lease))
        sequence.recover(mirror.table_folder, crashed_output, report, promote=lambda: promote[0]())
        found = self._snapshot_found(self.context.catalog.find(relations.target))
        if self.held.settle(mirror, relations.target, found, self._warn):
            self._found_record = _UNREAD  # the held change's snapshot was kept or put back: read again
        drop_stale_layers(self.context.catalog, self.relations)
        stale_staging = lease.stale_staging()
        if stale_staging is not None:
            self.context.publisher.discard(scratch_path(stale_staging))

    def _run_id_of(self, relation: Any) -> str | None:
        record = recorded_snapshot(self.context.statements, self.context.catalog.find(relation))
        return record.run_id if record else None

    def _check_not_interrupted(self) -> None:
        """dbt cancelled the run (Ctrl-C) while this model ran: it writes nothing more."""
        if self.context.interrupted():
            raise RunInterruptedError("interrupted: nothing published")

    # -- the output's columns and keys, and the plan ---------------------------------------------

    def _resolve_keys(self, columns: Sequence[ColumnSpec]) -> list[str]:
        """The key columns as the model spells them, after checking the column names."""
        names = [c.name for c in columns]
        check_output_columns(self.mirror.model, columns)
        return resolve_key_columns(self.mirror.model, self.mirror.unique_key, names)

    def _key_columns(self, columns: Sequence[ColumnSpec]) -> list[str]:
        """The key columns as the model spells them, after checking the output's column names
        and the key's types."""
        key_columns = self._resolve_keys(columns)
        specs = {spec.name: spec for spec in columns}
        for warning in check_key_types(self.mirror.model, [specs[k] for k in key_columns]):
            self._warn(warning)
        return key_columns

    def _select_candidates(self, existing: Any | None, snapshot: SnapshotRecord | None) -> Candidates:
        """What the model selected, moved to `relations.model_output`, its keys checked: a key may
        appear once among the rows it selected, flagged deleted or not."""
        mirror, relations = self.mirror, self.relations
        if self.candidates and (existing is None or snapshot is None):
            raise PublishError(
                f"Model '{mirror.model}' selected only candidate rows (is_incremental() was true), but its "
                f"snapshot {relations.target} is gone: run it again, it then runs in full. Nothing was published."
            )
        selected = self._model_rows()
        keys = selected.key_columns
        problems = self.context.statements.query(
            "openmirror_key_problems_sql", relation=str(selected.relation), key_columns=keys, counted=False
        )
        raise_key_problems(mirror.model, keys, problems, mirror.show_key_values)
        return selected

    def _model_rows(self) -> Candidates:
        """What the model built, moved to `relations.model_output`: the complete output is
        written from it (`_complete_output`)."""
        mirror, catalog, relations = self.mirror, self.context.catalog, self.relations
        built = relations.new_output.incorporate(type="view" if self._rows_built_as_view else "table")
        selected = relations.model_output.incorporate(type=built.type)
        catalog.drop(selected)
        catalog.rename(built, selected)
        columns = catalog.columns(selected)
        flag = delete_flag_column(mirror.model, mirror.delete_flag, columns) if mirror.delete_flag else None
        return Candidates(selected, columns, self._resolve_keys(columns), flag)

    def _complete_output(
        self,
        existing: Any | None,
        candidates: Candidates,
        previous_columns: list[ColumnSpec] | None,
        ignored: Sequence[ColumnSpec] = (),
    ) -> None:
        """`relations.new_output` becomes the model's complete output: the candidates it selected
        merged into the snapshot, without the rows flagged deleted (planning/candidates.py) and
        the `ignored` columns (on_schema_change='ignore': the snapshot does not keep them)."""
        relations, catalog = self.relations, self.context.catalog
        if self.candidates:
            self._diff().check_complete_table(self._snapshot_found(existing), existing)
        left_out = {c.name.lower() for c in ignored}
        self.context.statements.execute(
            "openmirror_complete_output_sql",
            target=str(relations.new_output),
            model_output=str(candidates.relation),
            snapshot=str(existing) if self.candidates else None,
            columns=[c for c in candidates.published_columns if c.name.lower() not in left_out],
            snapshot_columns=[c.name for c in previous_columns or []] if self.candidates else [],
            key_columns=candidates.key_columns,
            delete_flag=candidates.delete_flag,
        )
        catalog.created(relations.new_output)
        catalog.drop(candidates.relation)

    def _snapshot_found(self, existing: Any | None) -> SnapshotRecord | None:
        """The record of `existing`, which is `{{ this }}` as the run found it (None: no snapshot)."""
        if existing is None:
            return None
        if self._found_record is _UNREAD:
            self._found_record = recorded_snapshot(self.context.statements, existing)
        return cast(SnapshotRecord | None, self._found_record)

    def _destination(self, owner: str) -> Destination:
        return Destination(self.mirror.model, self.context.landing_zone, self.mirror.table_folder, owner)

    def _plan(
        self,
        key_columns: list[str],
        state: TableFolderState,
        snapshot: SnapshotRecord | None,
        previous_columns: list[ColumnSpec] | None,
        new_columns: list[ColumnSpec],
    ) -> RunPlan:
        mirror = self.mirror
        destination = self._destination(str(self.relations.target))
        if not state.exists:
            publisher = self.context.publisher
            publisher.check_new_folder_name(mirror.table_folder, mirror.model)
            journals = publisher.records_beside(mirror.table_folder)
            for old_folder in left_behind(destination, journals, self.project_relations):
                self._warn(f"Model '{mirror.model}': publishing {mirror.table_folder} for the first time; {old_folder}")
        plan = plan_run(
            destination,
            key_columns,
            state,
            snapshot,
            self.full_refresh,
            previous_columns,
            new_columns,
            mirror.on_schema_change,
        )
        if plan.unexpected:
            action = "rebuilding" if plan.mode == REBUILD else "loading in full"
            self._warn(f"Model '{mirror.model}': {action} {mirror.table_folder}: {plan.reason}")
        self._warn_respelled(plan)
        return plan

    def _warn_respelled(self, plan: RunPlan) -> None:
        for published, spelled in plan.schema.respelled:
            self._warn(
                f"Model '{self.mirror.model}': column '{spelled}' is published as '{published}', the "
                "spelling the mirrored table has (column names are case-insensitive there and a "
                "table holds one spelling); on_schema_change='sync_all_columns' rebuilds the table "
                "to take the new spelling"
            )

    # -- staging and publishing ------------------------------------------------------------------

    def _start_staging(self) -> Staging:
        """Where the change rows are staged: where the mirror does not look (the landing zone's
        _scratchPad, or a local folder whose files are then uploaded there)."""
        self._check_not_interrupted()
        staging = start_staging(self.context.storage, scratch_path(self.run_id), self.context.staging_mode())
        self._staging.append(staging)
        return staging

    def _write_change_files(self, staging: Staging, change: ChangeRows) -> None:
        """Spark writes the change rows as Parquet files into `staging`."""
        statements, mirror = self.context.statements, self.mirror
        for key, value in PARQUET_WRITE_SETTINGS.items():
            statements.execute("openmirror_spark_setting_sql", key=key, value=value)
        statements.execute(
            "openmirror_write_files_sql",
            uri=staging.uri,
            select_sql=change.select_sql,
            compression=mirror.parquet_compression,
            max_rows_per_file=mirror.max_rows_per_file,
            writers=change.writers,
            shuffle=change.shuffle,
        )

    def _marker_counts(self, plan: RunPlan, staging: Staging) -> dict[int, int]:
        rows = self.context.statements.query(
            "openmirror_marker_counts_sql",
            uri=staging.uri,
            full_load=plan.mode != INCREMENTAL,
            change_markers=self.mirror.change_markers,
        )
        return {int(row[0]): int(row[1]) for row in rows}

    def _prepare_publish(
        self,
        plan: RunPlan,
        staging: Staging,
        state: TableFolderState,
        counts: dict[int, int],
    ) -> PendingPublish:
        """Which staged file becomes which number; nothing is published yet."""
        return self.context.publisher.prepare(
            self.mirror.table_folder,
            plan.key_columns,
            staging.path,
            state,
            counts,
            self.mirror.model,
            self.run_id,
            full_load=plan.mode != INCREMENTAL,
            rebuild=plan.mode == REBUILD,
            owner=str(self.relations.target),
        )

    def _discard_staged(self, staging: Staging) -> None:
        """Files staged for a publish that was never prepared go (as much as can go: the run's
        own error is the one to report)."""
        try:
            self.context.publisher.discard(staging.path)
        except Exception as exc:
            self.context.debug(f"Model '{self.mirror.model}': could not discard {staging.path}: {exc}")

    def _record_snapshot(
        self,
        plan: RunPlan,
        pending: PendingPublish,
        candidate_runs: int,
        output: Any,
        complete_rows: int | None,
        overlay: OverlayRecord | None,
    ) -> None:
        """`output` records the landing zone, folder and number it will match, the run that
        publishes it and the names its columns are published under (dropped columns are kept,
        as nulls, under the names the mirror knows); an overlay also its base and slot."""
        statements, relation = self.context.statements, str(output)
        if plan.schema.kept:
            statements.execute("openmirror_keep_columns_sql", relation=relation, kept=plan.schema.kept)
        published = [c.published_name for c in (*plan.schema.columns, *plan.schema.kept)]
        properties = snapshot_properties(
            self._destination(pending.owner or ""),
            pending.last_sequence_number,
            pending.run_id,
            published,
            held=self.mirror.publish == AFTER_TESTS,
            candidate_runs=candidate_runs,
            base_run_id=overlay.base_run_id if overlay else None,
            overlay=overlay.slot if overlay else None,
            inputs_digest=self._inputs_digest,
            rows=complete_rows,
        )
        if overlay is not None:
            properties[HASHES_COLUMNS] = overlay.signature
            properties[OVERLAY_FORMAT] = OVERLAY_FORMAT_VERSION
        statements.execute("openmirror_snapshot_record_sql", relation=relation, properties=properties)

    def _publish(self, pending: PendingPublish, make_snapshot: Callable[[], None]) -> PublishedFiles:
        """The publish sequence; the output becomes the snapshot just before the commit. A
        failure before the journal entry discards the staged files; after it, everything is
        left for the next run's recovery to finish (see publishing/recovery.py)."""
        publisher = self.context.publisher

        def discard() -> None:
            publisher.discard(pending.staged_folder)

        try:
            self._check_not_interrupted()
        except RunInterruptedError:
            discard()
            raise
        return self.context.publish(
            pending,
            self._held_lease(),
            self.mirror.model,
            self._warn,
            rebuild_wait_seconds=self.mirror.rebuild_wait_seconds,
            make_snapshot=make_snapshot,
            if_refused=discard,
        )

    def _make_snapshot(self) -> None:
        self._replace_snapshot()
        self._replace_hashes()
        drop_stale_layers(self.context.catalog, self.relations)

    def _replace_snapshot(self) -> None:
        """The new output becomes `{{ this }}`; the old one (a table, or an overlaid snapshot's
        view) is dropped. The one place a complete output becomes the snapshot."""
        catalog, relations = self.context.catalog, self.relations
        existing = catalog.find(relations.target)
        if existing is not None and existing.type == "view":
            # An overlaid snapshot's view holds no rows (its layers go with drop_stale_layers), and
            # Spark reads a view to rename it, which fails once a layer is gone: it is dropped.
            catalog.drop(existing)
            existing = None
        if existing is not None:
            if catalog.find(relations.backup):
                catalog.drop(relations.backup)
            catalog.rename(existing, relations.backup)
        catalog.rename(relations.new_output, relations.target)
        if existing is not None:
            catalog.drop(relations.backup)

    def _promote_overlay(self, slot: str, key_columns: list[str]) -> None:
        """The overlay in `slot` becomes part of the snapshot: a plain snapshot table becomes the
        base, and `{{ this }}` the view of the base overlaid by it, carrying the overlay's record
        (one statement). The one place an overlay becomes the snapshot; it can be repeated (the
        recovery of a run that stopped halfway through it)."""
        catalog, relations, statements = self.context.catalog, self.relations, self.context.statements
        overlay = relations.overlay(slot)
        existing = catalog.find(relations.target)
        if existing is not None and existing.type == "table":
            if catalog.find(relations.base) is not None:
                catalog.drop(relations.base)
            catalog.rename(existing, relations.base)
        properties = table_properties(statements, overlay)
        overlay_columns = catalog.columns(overlay)
        if all(c.name.lower() != IN_BASE for c in overlay_columns):  # written by an older version
            statements.execute("openmirror_add_in_base_sql", overlay=str(overlay))
        columns = model_columns(overlay_columns)
        statements.execute(
            "openmirror_overlay_view_sql",
            target=str(relations.target),
            base=str(relations.base),
            overlay=str(overlay),
            columns=[c.name for c in columns],
            key_columns=key_columns,
            properties={k: v for k, v in properties.items() if k.startswith("openmirror.")},
            by_key_hash=hash_diff.probes_by_key_hash(hash_diff.key_types(columns, key_columns)),
        )
        if existing is None or existing.type != "view":
            catalog.created(relations.target.incorporate(type="view"))
        for other in OVERLAY_SLOTS:
            if other != slot:
                catalog.drop(relations.overlay(other))
        catalog.drop(relations.changes)
        catalog.drop(relations.model_output)

    def _replace_hashes(self) -> None:
        """The output's key hashes go with it. They carry its run id, so a crash before this
        leaves hashes the next run sees do not match the snapshot (it then compares whole rows)."""
        catalog, relations = self.context.catalog, self.relations
        catalog.drop(relations.previous_hashes)
        catalog.rename(relations.new_hashes, relations.previous_hashes)
        catalog.drop(relations.changes)

    def _hold(self, pending: PendingPublish) -> PublishedFiles:
        """publish='after_tests': the output becomes `{{ this }}` for the tests; the staged files
        and the lease stay until the invocation's end (run/held_changes.py)."""
        lease, heartbeat = self._held_lease(), self._heartbeat
        assert heartbeat is not None
        self._lease, self._heartbeat = None, None  # no longer released when the model ends
        change = HeldChange(self.model_id, self.mirror, pending, self.relations.target, lease, heartbeat)
        relations = self.relations
        return self.held.hold(change, relations.new_output, relations.new_hashes, relations.changes)

    # -- what the run reports --------------------------------------------------------------------

    def _response(self, plan: RunPlan, counts: dict[int, int], files: list[str]) -> OpenMirrorResponse:
        response = publish_response(counts, files, self.mirror.table_folder, plan.mode, list(self.warnings))
        if self.mirror.publish == AFTER_TESTS:  # its files are named, not published (yet)
            response._message = f"held: {response._message}, published after its tests pass"
            response.mode = f"held: {response.mode}"
        return response

    def _check_partial(
        self,
        existing: Any | None,
        candidates: Candidates | None,
        previous_columns: list[ColumnSpec] | None,
    ) -> OpenMirrorResponse:
        """`dbt run --empty` builds the model with no rows, `--sample` with some: its columns and key
        are checked as a run would check them (the published columns: a `delete_flag` model's
        `candidates` without the flag), and nothing is published (the rows not built would be
        published as deletes).
        `{{ this }}` stays what was published (created from the rows built, with the published
        columns, unrecorded, only when there is none, so that downstream models can still be built)."""
        mirror, catalog, relations = self.mirror, self.context.catalog, self.relations
        columns = candidates.published_columns if candidates else catalog.columns(relations.new_output)
        key_columns = self._key_columns(columns)
        plan_schema(mirror.model, previous_columns, columns, mirror.on_schema_change, key_columns=key_columns)
        if existing is None:
            if candidates is not None:
                self._complete_output(None, candidates, None)
            catalog.rename(relations.new_output, relations.target)
        else:
            catalog.drop(candidates.relation if candidates else relations.new_output)
        return OpenMirrorResponse(
            _message=f"{self.partial_output}: columns and unique_key checked, "
            f"nothing published to {mirror.table_folder}",
            code="OPEN_MIRROR",
            table_folder=mirror.table_folder,
            mode="empty" if self.partial_output == "--empty" else "sample",
        )

    def _report_dry_run(self, plan: RunPlan, state: TableFolderState, change: ChangeRows) -> OpenMirrorResponse:
        """What a run would publish now: rows per marker, the table folder and the file numbers;
        nothing is written to the landing zone (the file count is an estimate when a change is
        split over several files)."""
        mirror = self.mirror
        full_load = plan.mode != INCREMENTAL
        counts = change.markers
        if counts is None:
            counts = marker_counts(
                self.context.statements, f"({change.select_sql}) change_rows", full_load, mirror.change_markers
            )
        keeps_empty = state.keeps_empty_file([c.name for c in plan.schema.added], full_load)
        files = hash_diff.file_count(sum(counts.values()), change.writers, mirror.max_rows_per_file, keeps_empty)
        first = 1 if full_load else state.last_sequence_number + 1
        names = [data_file_name(n) for n in range(first, first + files)]
        response = publish_response(counts, names, mirror.table_folder, plan.mode, list(self.warnings))
        notes = [f"{plan.mode}: {plan.reason}"] if plan.reason else []
        if state.pending is not None:
            notes.append(f"an interrupted publish of run {state.pending.run_id} would be finished or discarded first")
        detail = f" ({'; '.join(notes)})" if notes else ""
        response._message = f"dry run, nothing written: {describe_change(counts, names, mirror.table_folder)}{detail}"
        response.mode = f"dry run: {plan.mode}"
        return response

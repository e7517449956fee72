"""The adapter dbt loads: dbt-spark, the landing zone, and the entry points of the `open_mirror`
materialization, each handing the model's run to `run/mirror_run.py`.

One invocation shares the landing zone (opened once, below), its publisher and leases, the
staging mode and the changes held for their tests; each model run is a `MirrorRun`, freed with
its lease when dbt releases the model's connection (also when it failed).
"""

import json
import threading
import uuid
from collections.abc import Collection, Mapping, Sequence
from functools import cached_property
from typing import Any, cast

from dbt.adapters.base import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.invocation import get_invocation_id

from dbt.adapters.openmirror import storage as landing_zone_storage  # its factory is looked up when called
from dbt.adapters.openmirror.connections import OpenMirrorConnectionManager
from dbt.adapters.openmirror.errors import LandingZoneConfigError, OpenMirrorError
from dbt.adapters.openmirror.planning.candidates import selects_candidates
from dbt.adapters.openmirror.publishing.lease import LeaseManager
from dbt.adapters.openmirror.publishing.mirroring_service import MirroringService
from dbt.adapters.openmirror.publishing.publisher import Publisher
from dbt.adapters.openmirror.run.audit import model_relations, require_audit_hook, unaudited_reason
from dbt.adapters.openmirror.run.config import (
    ConfigSource,
    MirrorConfig,
    UserSetConfig,
    check_model_landing_zone,
    mirror_config,
    var_flag,
)
from dbt.adapters.openmirror.run.context import RunContext
from dbt.adapters.openmirror.run.held_changes import FinishedAudits, HeldChanges
from dbt.adapters.openmirror.run.mirror_run import MirrorRun
from dbt.adapters.openmirror.run.model_warnings import warn
from dbt.adapters.openmirror.run.overlay import usable_snapshot
from dbt.adapters.openmirror.run.response import OpenMirrorResponse
from dbt.adapters.openmirror.run.staging_mode import StagingModeChoice
from dbt.adapters.openmirror.run.statements import AdapterCatalog, AdapterStatements, recorded_snapshot
from dbt.adapters.openmirror.spark.model_inputs import ModelInputs, model_inputs
from dbt.adapters.openmirror.spark.relation_info import as_described
from dbt.adapters.openmirror.spark.session_defaults import apply_session_defaults
from dbt.adapters.openmirror.spark.table_folders import SessionTableFolders, TableFolders
from dbt.adapters.openmirror.storage import LandingZoneStorage
from dbt.adapters.openmirror.storage.root import check_root

logger = AdapterLogger("OpenMirror")


class OpenMirrorAdapter(SparkAdapter):
    ConnectionManager = OpenMirrorConnectionManager

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        apply_session_defaults(self.config)
        # Model runs per thread (dbt runs models in threads), closed when the model ends.
        self._runs: dict[int, list[MirrorRun]] = {}
        self._runs_lock = threading.Lock()
        # Models whose `is_incremental()` was true when they were compiled: they selected candidates.
        self._selected_candidates: set[str] = set()

    def _build_spark_relation_list(self, row_list: Any, relation_info_func: Any) -> list[Any]:
        return [as_described(r) for r in super()._build_spark_relation_list(row_list, relation_info_func)]

    @cached_property
    def landing_zone(self) -> LandingZoneStorage:
        """Where the adapter opens its landing-zone storage (once per invocation)."""
        credentials = self.config.credentials
        storage = landing_zone_storage.open_landing_zone(credentials.landing_zone, credentials.azure_auth())
        check_root(storage, credentials.create_landing_zone, logger.info)
        return storage

    @cached_property
    def run_context(self) -> RunContext:
        statements = AdapterStatements(self)
        storage = self.landing_zone
        return RunContext(
            storage=storage,
            publisher=Publisher(storage, MirroringService(storage, logger.info)),
            leases=LeaseManager(storage),
            statements=statements,
            catalog=AdapterCatalog(self, statements),
            landing_zone=self.config.credentials.landing_zone,
            staging_mode=StagingModeChoice(
                self.config.credentials.spark_staging,
                storage,
                statements,
                logger.info,
                logger.debug,
            ),
            model_inputs=self._model_inputs,
            table_folders=self._table_folders,
            interrupted=cast(OpenMirrorConnectionManager, self.connections).interrupted.is_set,
            warn=warn,
            info=logger.info,
            debug=logger.debug,
            warning=logger.warning,
            error=logger.error,
        )

    def _in_process_session(self) -> Any | None:
        """The Spark session dbt-spark's session connection runs every statement on (already
        open: dbt filled its relation cache through it); None when Spark runs outside dbt's
        process (the profile's method is not session)."""
        if self.config.credentials.method != SparkConnectionMethod.SESSION:
            return None
        from pyspark.sql import SparkSession

        return SparkSession.builder.getOrCreate()

    def _model_inputs(self, sql: str, context: Sequence[str]) -> ModelInputs:
        session = self._in_process_session()
        if session is None:
            return ModelInputs(None, "Spark runs outside dbt's process (the profile's method is not session)")
        return model_inputs(session, sql, context)

    def _table_folders(self) -> TableFolders | None:
        session = self._in_process_session()
        return SessionTableFolders(session) if session is not None else None

    @cached_property
    def held_changes(self) -> HeldChanges:
        return HeldChanges(self.run_context)

    def debug_query(self) -> None:
        super().debug_query()
        storage = self.landing_zone
        # At the root, where table folders are created, under a name the mirror ignores.
        probe = f"_dbt-openmirror-debug-{uuid.uuid4().hex}"
        try:
            storage.check_writable(probe)
        except (OSError, OpenMirrorError) as exc:
            raise LandingZoneConfigError(f"landing zone {storage.location} is not writable: {exc}") from exc

    def release_connection(self) -> None:
        # dbt releases the connection when a model ends, also when it failed: free its leases.
        with self._runs_lock:
            runs = self._runs.pop(threading.get_ident(), [])
        for run in runs:
            run.close()
        super().release_connection()

    # -- the materialization's entry points ------------------------------------------------------

    @available
    def openmirror_start(
        self,
        model_name: str,
        model_id: str,
        this: Any,
        config: ConfigSource,
        set_by_user: Collection[str],
        full_refresh: bool,
        dry_run: Any,
        partial_output: str | None,
        graph: Mapping[str, Any],
        selected_resources: Collection[str],
    ) -> MirrorRun:
        """A model's run begins: its config checked (`config` is dbt's, `set_by_user` the model's
        unrendered_config), and, when it publishes, its table's lease taken and what an
        interrupted run left finished. A change held for tests this invocation does not run is
        only reported, as a dry run's. `partial_output` says why the invocation builds only part of
        the model's rows (`--empty`, `--sample`; macros/package/audit.sql), None when it builds all."""
        mirror = self._mirror_config(model_name, this, config, set_by_user)
        check_model_landing_zone(model_name, config.get("landing_zone"), self.config.credentials.landing_zone)
        nodes = graph.get("nodes", {})
        require_audit_hook(mirror, nodes)
        asked_for_dry_run = var_flag("openmirror_dry_run", dry_run)
        unaudited = unaudited_reason(
            mirror.publish, asked_for_dry_run or partial_output is not None, model_id, nodes, selected_resources
        )
        run = MirrorRun(
            self.run_context,
            self.held_changes,
            mirror,
            this,
            f"{get_invocation_id()}-{uuid.uuid4().hex[:8]}",
            model_id,
            full_refresh,
            asked_for_dry_run or unaudited is not None,
            partial_output,
            candidates=model_id in self._selected_candidates,
            report_only_because=unaudited,
            project_relations=model_relations(nodes),
        )
        self._selected_candidates.discard(model_id)
        with self._runs_lock:
            self._runs.setdefault(threading.get_ident(), []).append(run)
        run.prepare()
        return run

    @available
    def openmirror_is_incremental(
        self,
        model_name: str,
        model_id: str,
        this: Any,
        config: ConfigSource,
        set_by_user: Collection[str],
        full_refresh: bool,
        reconcile: Any,
    ) -> bool:
        """`is_incremental()` in an `open_mirror` model, as it is compiled (planning/candidates.py).
        When true, the model's run merges what it selected into its snapshot."""
        mirror = self._mirror_config(model_name, this, config, set_by_user)
        relation = self.get_relation(this.database, this.schema, this.identifier)
        snapshot = None
        if relation is not None and relation.type in ("table", "view"):  # a view: an overlaid snapshot
            statements = AdapterStatements(self)
            record = recorded_snapshot(statements, relation)
            snapshot = record if usable_snapshot(AdapterCatalog(self, statements), relation, record) else None
        selected = selects_candidates(
            snapshot, full_refresh, var_flag("openmirror_reconcile", reconcile), mirror.reconcile_every
        )
        if selected:
            self._selected_candidates.add(model_id)
        else:
            self._selected_candidates.discard(model_id)
        return selected

    @staticmethod
    def _mirror_config(model_name: str, this: Any, config: ConfigSource, set_by_user: Collection[str]) -> MirrorConfig:
        """The model's validated config: `config` is dbt's, `set_by_user` the model's unrendered_config."""
        return mirror_config(model_name, this.schema, this.identifier, UserSetConfig(config, set_by_user))

    @available
    def openmirror_inputs_unchanged(
        self, run: MirrorRun, existing: Any | None, compiled_sql: str, model: Mapping[str, Any], reconcile: Any
    ) -> bool:
        """Before the output is built: true when the model reads what its snapshot was built from
        (the run then builds and publishes nothing). `model` is dbt's node: its config and
        columns (hooks, contract, column types) count as part of the model."""
        definition = json.dumps(
            {"config": model.get("config"), "columns": model.get("columns")}, sort_keys=True, default=str
        )
        return run.inputs_unchanged(existing, compiled_sql, definition, var_flag("openmirror_reconcile", reconcile))

    @available
    def openmirror_publish(self, run: MirrorRun, existing: Any | None) -> OpenMirrorResponse:
        """The model output is built: publish it (or check it, or report what would be published)."""
        return run.publish(existing)

    @available
    def openmirror_finish_audits(self, results: Sequence[Any], graph: Mapping[str, Any]) -> FinishedAudits:
        """The on-run-end hook: publish each held change whose tests passed, discard the others.
        dbt runs it after cancelling the models only when it goes on (--fail-fast; after Ctrl-C
        it runs no hook), so the statements it needs may run again. Failures are returned, not
        raised: raised while dbt renders the hook, dbt reports them as a keyboard interrupt and
        counts no error; the hook's statement fails with them instead."""
        cast(OpenMirrorConnectionManager, self.connections).interrupted.clear()
        return self.held_changes.finish(results, graph)

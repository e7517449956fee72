"""One model's publish as the materialization drives it (prepare, build the output, publish, the
model ends), against the fake warehouse and a real local landing zone in a test's folder."""

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec
from dbt.adapters.openmirror.publishing.lease import LeaseManager
from dbt.adapters.openmirror.publishing.publisher import Publisher
from dbt.adapters.openmirror.rules.landing_zone import PUBLISH_RECORD_FILE
from dbt.adapters.openmirror.rules.markers import ROW_MARKER
from dbt.adapters.openmirror.run.config import mirror_config
from dbt.adapters.openmirror.run.context import RunContext
from dbt.adapters.openmirror.run.held_changes import HeldChanges
from dbt.adapters.openmirror.run.mirror_run import MirrorRun
from dbt.adapters.openmirror.run.relations import RunRelations
from dbt.adapters.openmirror.run.response import OpenMirrorResponse
from dbt.adapters.openmirror.spark.model_inputs import ModelInputs
from dbt.adapters.openmirror.storage.local import LocalStorage
from tests.support.fake_warehouse import FakeRelation, FakeWarehouse

COLUMNS = [ColumnSpec("id", "int"), ColumnSpec("name", "string")]
THIS = FakeRelation("analytics", "customers")
FIRST = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]


class Project:
    """One model publishing into a landing zone in tmp_path, run after run."""

    def __init__(self, root: Path, config: dict[str, Any] | None = None) -> None:
        self.landing_zone = root / "landing_zone"
        self.landing_zone.mkdir()
        self.storage = LocalStorage(self.landing_zone)
        self.warehouse = FakeWarehouse()
        self.warehouse.declared_renames = {
            (source.identifier, to.identifier)
            for publishes in (True, False)
            for source, to in RunRelations.of(THIS, publishes).renamed()
        }
        self.mirror = mirror_config("customers", THIS.schema, THIS.identifier, {"unique_key": "id", **(config or {})})
        self.warned: list[str] = []
        self.runs = 0
        #: What the model reads, as the in-process session would tell (none by default: the fake
        #: warehouse is not Spark); each run's `built` says whether it built its output.
        self.inputs = ModelInputs(None, "the fake warehouse")
        self.built: list[bool] = []
        self.context = RunContext(
            storage=self.storage,
            publisher=Publisher(self.storage),
            leases=LeaseManager(self.storage),
            statements=self.warehouse,
            catalog=self.warehouse,
            landing_zone=str(self.landing_zone),
            staging_mode=lambda: "direct",
            model_inputs=lambda sql, context: self.inputs,
            table_folders=lambda: None,
            interrupted=lambda: False,
            warn=self.warned.append,
            info=print,
            debug=print,
            warning=print,
            error=print,
        )
        self.held = HeldChanges(self.context)

    @property
    def folder(self) -> Path:
        return self.landing_zone / self.mirror.table_folder

    def run(
        self,
        rows: list[dict[str, Any]],
        full_refresh: bool = False,
        dry_run: bool = False,
        reconcile: bool = False,
    ) -> OpenMirrorResponse:
        """As the materialization: start, build the output, publish, and the model ends."""
        self.runs += 1
        self.warehouse.statements.clear()
        run = MirrorRun(
            self.context,
            self.held,
            self.mirror,
            THIS,
            f"run-{self.runs}",
            "model.shop.customers",
            full_refresh,
            dry_run,
            partial_output=None,
        )
        try:
            run.prepare()
            existing = self.warehouse.find(run.relations.target)
            self.warehouse.drop(run.relations.new_output)
            self.built.append(not run.inputs_unchanged(existing, "select * from customers", "{}", reconcile))
            if self.built[-1]:
                self.warehouse.build(run.relations.new_output, COLUMNS, rows)
            return run.publish(existing)
        finally:
            run.close()

    def files(self) -> list[str]:
        return sorted(p.name for p in self.folder.glob("*.parquet"))

    def rows(self, name: str) -> list[dict[str, Any]]:
        return sorted(pq.read_table(self.folder / name).to_pylist(), key=lambda r: (r[ROW_MARKER], r["id"]))

    def record(self) -> dict[str, Any]:
        return json.loads((self.folder / PUBLISH_RECORD_FILE).read_text())

    def snapshot(self) -> dict[str, str]:
        return self.warehouse.table(THIS).properties

"""Candidate runs at the cost of their change (planning/overlay.py): the snapshot stays as a base
table and `{{ this }}` becomes a view of it overlaid by the rows the candidate runs selected. After
every run the landing zone replays to the model's complete output, `{{ this }}` (and what is built
on it) holds it, and a run in full folds the overlay back into a plain table."""

from functools import partial

import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture
from pyspark.sql import SparkSession

from dbt.adapters.openmirror.planning import overlay
from dbt.adapters.openmirror.run.mirror_run import MirrorRun
from tests.functional.test_incremental_models import MODEL, RECONCILE, Incremental, _source
from tests.functional.test_publish_modes import HOOK
from tests.support.mirror import (
    assert_mirror_equals,
    data_files,
    file_markers,
    findings_for,
    model_output,
    relations,
    set_source,
    table_folder,
    tree_digest,
)

DOWNSTREAM = "select count(*) as orders, sum(updated_at) as stamps from {{ ref('orders') }}"
TESTS = """
version: 2
models:
  - name: orders
    columns:
      - name: id
        tests: [unique, not_null]
"""


def with_region(rows: str) -> str:
    """The source's rows with a column the model did not return before (`region`)."""
    return (
        "select id, name, updated_at, cast(deleted as boolean) as deleted, concat('r', id) as region"
        f" from values {rows} as t(id, name, updated_at, deleted)"
    )


class Overlaid(Incremental):
    def layers(self, warehouse, schema: str) -> dict[str, str]:
        """The relations of the `orders` snapshot: itself, its base and its overlays."""
        return {name: kind for name, kind in relations(warehouse, schema).items() if name.startswith("orders")}

    def overlay(self, warehouse, schema: str) -> str:
        """The overlay table the snapshot's view reads."""
        [overlay] = [name for name in self.layers(warehouse, schema) if "__om_overlay_" in name]
        return f"{schema}.{overlay}"

    def overlay_keys(self, warehouse, schema: str) -> dict[int, bool]:
        """The overlay's keys, each with whether the base holds it (only those hide a base row)."""
        rows = model_output(warehouse, f"select id, __openmirror_in_base from {self.overlay(warehouse, schema)}")
        return {row["id"]: row["__openmirror_in_base"] for row in rows}

    def candidate_runs(self, warehouse, schema: str) -> str:
        """The candidate runs in a row the snapshot's record counts."""
        properties = dict(warehouse.project.run_sql(f"show tblproperties {schema}.orders", fetch="all"))
        return properties["openmirror.candidate_runs"]

    def quiet_run(self, project, warehouse, landing_zone, tmp_path, folder, rows: str, args=()) -> None:
        """A candidate run with nothing to publish: no file, the table folder byte for byte as it
        was, and the snapshot's tables and view (which overlay it reads) as they were."""
        schema = project.test_schema
        layers, published = self.layers(warehouse, schema), tree_digest(folder)
        response = self.publish(project, warehouse, rows, args)
        assert response["files"] == [] and response["mode"] == "incremental"
        assert tree_digest(folder) == published
        assert self.layers(warehouse, schema) == layers
        self.check(project, warehouse, landing_zone, tmp_path)

    def check_downstream(self, project, warehouse) -> None:
        schema = project.test_schema
        expected = model_output(
            warehouse, f"select count(*) as orders, sum(updated_at) as stamps from {schema}.src where not deleted"
        )
        assert model_output(warehouse, f"select * from {schema}.order_totals") == expected


class TestOverlaidSnapshot(Overlaid):
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": MODEL, "order_totals.sql": DOWNSTREAM, "schema.yml": TESTS}

    def build(self, project, warehouse, rows, args=()):
        set_source(warehouse, project.test_schema, _source(rows))
        results = run_dbt(["build", *args])
        return next(r.adapter_response for r in results if r.node.name == "orders")

    def test_candidate_runs_overlay_then_a_full_run_folds_back(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        self.build(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)")
        folder = self.check(project, warehouse, landing_zone, tmp_path)
        assert self.layers(warehouse, schema) == {"orders": "table", "orders__om_hashes": "table"}

        # 2 changes, 3 is flagged deleted, 4 is new: the snapshot becomes the base of a view.
        self.build(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 2, true), (4, 'd', 2, false)")
        self.check(project, warehouse, landing_zone, tmp_path)
        self.check_downstream(project, warehouse)
        assert sorted(file_markers(folder)[-1]) == [0, 1, 2]
        assert self.overlay_keys(warehouse, schema) == {2: True, 3: True, 4: False}
        assert self.layers(warehouse, schema) == {
            "orders": "view",
            "orders__om_base": "table",
            "orders__om_hashes": "table",
            "orders__om_overlay_a": "table",
        }

        # A key only the overlay holds is deleted, a deleted key comes back, an overlaid key
        # changes again, a new one arrives: the other overlay table takes over.
        rows = "(1, 'a', 1, false), (2, 'BB', 3, false), (3, 'c3', 3, false), (4, 'd', 3, true), (5, 'e', 3, false)"
        response = self.build(project, warehouse, rows)
        self.check(project, warehouse, landing_zone, tmp_path)
        self.check_downstream(project, warehouse)
        assert response["mode"] == "incremental" and sorted(file_markers(folder)[-1]) == [0, 0, 1, 2]
        assert self.overlay_keys(warehouse, schema) == {2: True, 3: True, 4: False, 5: False}
        assert set(self.layers(warehouse, schema)) == {
            "orders",
            "orders__om_base",
            "orders__om_hashes",
            "orders__om_overlay_b",
        }

        # The same candidates again: nothing to publish.
        response = self.build(project, warehouse, rows)
        assert response["files"] == [] and len(file_markers(folder)) == 3
        self.check(project, warehouse, landing_zone, tmp_path)

        # A reconcile runs the model in full: {{ this }} is a complete table again. Its diff joins
        # the overlaid snapshot's key hashes (the base's under the overlay's own), not whole rows.
        results, log = run_dbt_and_capture(["--debug", "build", "--vars", "{openmirror_reconcile: true}"])
        response = next(r.adapter_response for r in results if r.node.name == "orders")
        assert "openmirror_changed_keys_sql" in log or "__om_changes" in log
        assert "comparing whole rows" not in log
        self.check(project, warehouse, landing_zone, tmp_path)
        self.check_downstream(project, warehouse)
        assert response["mode"] == "incremental" and response["files"] == []
        assert self.layers(warehouse, schema) == {"orders": "table", "orders__om_hashes": "table"}


def rewrite_as_before_the_in_base_bit(table: str) -> None:
    """`table`, an overlay, as versions before the overlay format `in_base` wrote it: without the
    column, and without the format in its record."""
    spark = SparkSession.builder.getOrCreate()
    rows = spark.sql(f"show tblproperties {table}").collect()
    properties = {r["key"]: r["value"] for r in rows if r["key"].startswith("openmirror.")}
    del properties[overlay.OVERLAY_FORMAT]
    columns = ", ".join(f"`{c}`" for c in spark.table(table).columns if c != overlay.IN_BASE)
    spark.sql(f"create table {table}_old using parquet as select {columns} from {table}")
    listed = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    spark.sql(f"alter table {table}_old set tblproperties ({listed})")
    spark.sql(f"drop table {table}")
    spark.sql(f"alter table {table}_old rename to {table}")


@pytest.mark.extended
class TestAnOlderVersionsOverlayLeftHalfPublished(Overlaid):
    def test_the_recovery_makes_it_the_snapshot(self, project, warehouse, landing_zone, tmp_path, monkeypatch):
        """A candidate run of a version before the overlay's in_base bit stopped after its files
        were journaled, before its overlay became the snapshot: the next run rolls it forward."""
        schema = project.test_schema
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)")
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false), (4, 'd', 2, false)")
        promote = MirrorRun._promote_overlay

        def stopped_by_an_older_version(run, slot, key_columns):
            rewrite_as_before_the_in_base_bit(f"{schema}.orders__om_overlay_{slot}")
            raise RuntimeError("the older version's run stopped here")

        monkeypatch.setattr(MirrorRun, "_promote_overlay", stopped_by_an_older_version)
        changed = "(1, 'a', 1, false), (2, 'B2', 3, false), (3, 'c', 3, true), (4, 'd', 2, false)"
        set_source(warehouse, schema, _source(changed))
        run_dbt(["run"], expect_pass=False)
        monkeypatch.setattr(MirrorRun, "_promote_overlay", promote)
        results, log = run_dbt_and_capture(["run"])
        assert "Rolling forward" in log
        self.check(project, warehouse, landing_zone, tmp_path)
        # That run's own candidates did not trust the older overlay's hashes: merged, a table again.
        assert self.layers(warehouse, schema)["orders"] == "table"
        self.publish(project, warehouse, f"{changed}, (5, 'e', 4, false)")
        self.check(project, warehouse, landing_zone, tmp_path)
        assert self.layers(warehouse, schema)["orders"] == "view"


class TestOverlayLimitAndColumnChanges(Overlaid):
    """An overlay past its limit, and a column the model adds while overlaid, make the candidate
    run merge into a complete table."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": MODEL}

    def test_folding_back(self, project, warehouse, landing_zone, tmp_path, monkeypatch):
        schema = project.test_schema
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)")
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 1, false)")
        self.check(project, warehouse, landing_zone, tmp_path)
        assert self.layers(warehouse, schema)["orders"] == "view"

        # Past the limit (here: any overlay), the candidates are merged into a complete table.
        with monkeypatch.context() as patched:
            patched.setattr(overlay, "MIN_OVERLAY_ROWS", 0)
            self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C', 3, false)")
        folder = self.check(project, warehouse, landing_zone, tmp_path)
        assert file_markers(folder)[-1] == [1]
        assert self.layers(warehouse, schema) == {"orders": "table", "orders__om_hashes": "table"}

        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C', 4, false)")
        assert self.layers(warehouse, schema)["orders"] == "view"
        # A new column while overlaid: merged into a complete table, NULL on the other rows.
        set_source(warehouse, schema, with_region("(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C', 5, false)"))
        run_dbt(["run"])
        assert self.layers(warehouse, schema)["orders"] == "table"
        assert model_output(warehouse, f"select id, region from {schema}.orders") == [
            {"id": 1, "region": None},
            {"id": 2, "region": None},
            {"id": 3, "region": "r3"},
        ]


STRICT_MODEL = MODEL.replace("updated_at >= (select", "updated_at > (select")


@pytest.mark.extended
class TestCandidateRunsThatSelectNothing(Overlaid):
    """A candidate run whose model selects no row (`updated_at >` the latest published) changes
    nothing: no file, and the snapshot's tables stay as they are, a table or an overlaid view
    alike. Its record still counts it, because `reconcile_every` counts runs."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": STRICT_MODEL}

    def test_nothing_selected(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        every = ["--vars", "{reconcile_every: 4}"]
        quiet_run = partial(self.quiet_run, project, warehouse, landing_zone, tmp_path, args=every)

        first = "(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)"
        self.publish(project, warehouse, first, every)
        folder = self.check(project, warehouse, landing_zone, tmp_path)
        quiet_run(folder, first)  # the snapshot is still a plain table
        assert self.layers(warehouse, schema)["orders"] == "table" and self.candidate_runs(warehouse, schema) == "1"

        changed = "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 1, false)"
        self.publish(project, warehouse, changed, every)
        self.check(project, warehouse, landing_zone, tmp_path)
        quiet_run(folder, changed)  # now an overlaid view
        assert self.layers(warehouse, schema)["orders"] == "view" and self.candidate_runs(warehouse, schema) == "3"

        # The fourth run since the full one runs in full: 3's unflagged delete is published.
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false)", every)
        self.check(project, warehouse, landing_zone, tmp_path)
        assert file_markers(folder)[-1] == [2]
        assert self.layers(warehouse, schema) == {"orders": "table", "orders__om_hashes": "table"}


@pytest.mark.extended
class TestLayersDroppedByHand(Overlaid):
    """An overlaid snapshot whose base or overlay someone dropped is no snapshot: its view cannot
    be read. The next run runs the model in full (`is_incremental()` is false) and loads the
    table folder again, as when `{{ this }}` itself is gone, instead of failing on the view (or,
    once its files were published, failing in every later run)."""

    def test_a_dropped_base_then_a_dropped_overlay(self, project, warehouse, landing_zone, tmp_path, monkeypatch):
        schema = project.test_schema
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, false)")
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false)")
        assert self.layers(warehouse, schema)["orders"] == "view"
        warehouse.run(f"drop table {schema}.orders__om_base")
        response = self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 3, false)")
        assert response["mode"] != "incremental"
        self.check(project, warehouse, landing_zone, tmp_path)
        assert self.layers(warehouse, schema) == {"orders": "table", "orders__om_hashes": "table"}

        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C', 4, false)")
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C', 4, true)")
        self.check(project, warehouse, landing_zone, tmp_path)
        warehouse.run(f"drop table {self.overlay(warehouse, schema)}")
        self.publish(project, warehouse, "(1, 'a', 1, false), (3, 'C', 4, true)", RECONCILE)
        self.check(project, warehouse, landing_zone, tmp_path)
        self.publish(project, warehouse, "(1, 'a', 5, false), (3, 'C', 4, true)")
        self.check(project, warehouse, landing_zone, tmp_path)

        # A run in full crashed after its files were published, before its output replaced the
        # overlaid view; then the base went. The next run's recovery replaces the view all the
        # same (Spark cannot rename a view whose table is gone; it can drop it).
        self.publish(project, warehouse, "(1, 'a', 6, false), (3, 'C', 4, true), (4, 'd', 6, false)")
        assert self.layers(warehouse, schema)["orders"] == "view"

        def crash(run) -> None:
            raise RuntimeError("crashed before the snapshot step")

        with monkeypatch.context() as patched:
            patched.setattr(MirrorRun, "_replace_snapshot", crash)
            set_source(warehouse, schema, _source("(1, 'a', 6, false), (4, 'd', 7, false)"))
            run_dbt(["run", *RECONCILE], expect_pass=False)
        warehouse.run(f"drop table {schema}.orders__om_base")
        self.publish(project, warehouse, "(1, 'a', 6, false), (4, 'd', 7, false)")
        self.check(project, warehouse, landing_zone, tmp_path)
        assert self.layers(warehouse, schema) == {"orders": "table", "orders__om_hashes": "table"}


class TestCandidatesAsPublished(Overlaid):
    """The `>=` idiom selects the latest published rows again on every run. Candidates as
    published, and flagged deletes of keys the snapshot does not hold, change nothing: such a run
    writes nothing, like one that selects nothing, and the overlay holds only the keys that
    changed."""

    def test_candidates_as_published(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        quiet_run = partial(self.quiet_run, project, warehouse, landing_zone, tmp_path)
        first = "(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)"
        self.publish(project, warehouse, first)
        folder = self.check(project, warehouse, landing_zone, tmp_path)
        quiet_run(folder, first)  # all three selected again, as published
        assert self.layers(warehouse, schema)["orders"] == "table" and self.candidate_runs(warehouse, schema) == "1"

        # 2 changes; 9 arrives flagged deleted, a key the snapshot never held: one UPDATE.
        changed = "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 1, false), (9, 'z', 2, true)"
        self.publish(project, warehouse, changed)
        self.check(project, warehouse, landing_zone, tmp_path)
        assert file_markers(folder)[-1] == [1]
        assert self.overlay_keys(warehouse, schema) == {2: True}
        quiet_run(folder, changed)  # 2 and 9 selected again: an overlaid view, left as it is
        assert self.layers(warehouse, schema)["orders"] == "view" and self.candidate_runs(warehouse, schema) == "3"

        # 3 changes beside 2 and 9 as published: only 3 joins the overlay.
        later = "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C', 2, false), (9, 'z', 2, true)"
        self.publish(project, warehouse, later)
        self.check(project, warehouse, landing_zone, tmp_path)
        assert file_markers(folder)[-1] == [1]
        assert self.overlay_keys(warehouse, schema) == {2: True, 3: True}

        # An overlay recorded without its layout (written before overlays said which keys the
        # base holds) is not trusted: the next run folds it back into a complete table.
        run_sql = warehouse.project.run_sql
        run_sql(f"alter table {self.overlay(warehouse, schema)} unset tblproperties ('openmirror.overlay_format')")
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C3', 3, false)")
        self.check(project, warehouse, landing_zone, tmp_path)
        assert file_markers(folder)[-1] == [1]
        assert self.layers(warehouse, schema) == {"orders": "table", "orders__om_hashes": "table"}


@pytest.mark.extended
class TestARespelledColumnStillOverlays(Overlaid):
    """A model that respells a column in case only (`name` -> `NAME`) keeps publishing it under
    the mirror's spelling, with a warning; its candidate runs still overlay the snapshot instead of
    rewriting it, and `{{ this }}` takes the model's spelling."""

    def test_candidate_runs_overlay(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)")
        folder = table_folder(landing_zone, schema, "orders")
        respelled = (
            "select id, name as NAME, updated_at, cast(deleted as boolean) as deleted from values {}"
            " as t(id, name, updated_at, deleted)"
        )
        for rows, changed in [
            ("(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 1, false)", {2: True}),
            ("(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C', 3, true), (4, 'd', 3, false)", {3: True, 4: False}),
        ]:
            set_source(warehouse, schema, respelled.format(rows))
            [result] = run_dbt(["run"])
            assert "column 'NAME' is published as 'name'" in " ".join(result.adapter_response["warnings"])
            assert self.layers(warehouse, schema)["orders"] == "view"
            assert set(changed.items()) <= set(self.overlay_keys(warehouse, schema).items())
            live = f"from {schema}.src where not deleted"
            assert_mirror_equals(warehouse, folder, f"select id, name, updated_at {live}")
            assert model_output(warehouse, f"select * from {schema}.orders") == model_output(
                warehouse, f"select id, name as NAME, updated_at {live}"
            )
            assert findings_for(landing_zone, folder) == []
        assert {tuple(pq.read_schema(path).names) for path in data_files(folder)} <= {
            ("id", "name", "updated_at"),
            ("id", "name", "updated_at", "__rowMarker__"),
        }


HELD_MODEL = MODEL.replace("reconcile_every=var('reconcile_every', none)", "publish=var('publish')")
HELD_TESTS = """
version: 2
models:
  - name: orders
    columns:
      - name: name
        tests: [not_null]
"""


@pytest.mark.extended
class TestHeldChangeOnAnOverlaidSnapshot(Overlaid):
    """publish='after_tests' merges into a complete table; a change whose tests fail gives the
    overlaid snapshot back, one whose tests pass replaces it."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": HELD_MODEL, "schema.yml": HELD_TESTS}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return HOOK

    def test_held_then_discarded_then_published(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        now = ["--vars", "{publish: on_run}"]
        held = ["--vars", "{publish: after_tests}"]
        for rows in ("(1, 'a', 1, false), (2, 'b', 1, false)", "(1, 'a', 1, false), (2, 'B', 2, false)"):
            set_source(warehouse, schema, _source(rows))
            run_dbt(["run", *now])
        folder = self.check(project, warehouse, landing_zone, tmp_path)
        assert self.layers(warehouse, schema)["orders"] == "view"

        set_source(warehouse, schema, _source("(1, 'a', 1, false), (2, null, 3, false)"))
        run_dbt(["build", *held], expect_pass=False)
        assert len(file_markers(folder)) == 2
        assert self.layers(warehouse, schema)["orders"] == "view"
        set_source(warehouse, schema, _source("(1, 'a', 1, false), (2, 'B', 2, false)"))
        self.check(project, warehouse, landing_zone, tmp_path)

        set_source(warehouse, schema, _source("(1, 'a', 1, false), (2, 'b2', 3, false)"))
        run_dbt(["build", *held])
        self.check(project, warehouse, landing_zone, tmp_path)
        assert file_markers(folder)[-1] == [1]
        assert self.layers(warehouse, schema) == {"orders": "table", "orders__om_hashes": "table"}


COMPOSITE_MODEL = """
{{ config(materialized='open_mirror', unique_key=['part', 'id'], delete_flag='deleted') }}
select cast(id % 2 as string) as part, id, name, updated_at, deleted from {{ target.schema }}.src
{% if is_incremental() %}
where updated_at >= (select max(updated_at) from {{ this }})
{% endif %}
"""


class TestCompositeKeyOverlay(Overlaid):
    """A key of several columns: the overlay's joins with the large side go through one 64-bit
    hash of the key (`openmirror_probe_join`) and still match exactly."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": COMPOSITE_MODEL}

    def complete_output(self, project) -> str:
        schema = project.test_schema
        return f"select cast(id % 2 as string) as part, id, name, updated_at from {schema}.src where not deleted"

    def test_rounds_match_exactly_through_the_key_hash(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)")
        rounds = [
            ("(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 2, true), (4, 'd', 2, false)", [0, 1, 2]),
            ("(1, 'a', 1, false), (2, 'BB', 3, false), (3, 'c3', 3, false), (4, 'd', 3, true)", [0, 1, 2]),
            ("(1, 'a', 1, false), (2, 'BB', 3, false), (3, 'c3', 3, false), (4, 'd', 3, true)", []),
        ]
        for rows, markers in rounds:
            response = self.publish(project, warehouse, rows)
            folder = self.check(project, warehouse, landing_zone, tmp_path)
            assert (sorted(file_markers(folder)[-1]) if response["files"] else []) == markers
            assert self.layers(warehouse, schema)["orders"] == "view"

        plan = warehouse.project.run_sql(f"explain select * from {schema}.orders", fetch="all")[0][0]
        [anti_join] = [line for line in plan.splitlines() if "LeftAnti" in line]
        probe_keys = anti_join.split("[", 1)[1].split("]", 1)[0]  # the join keys of the probed side
        assert probe_keys.startswith("xxhash64(") and probe_keys.count("xxhash64") == 1


class TestADroppedColumnStillOverlays(Overlaid):
    """A column the model stops returning stays in the mirror and in `{{ this }}` as NULL
    (`append_new_columns`). The candidate run that drops it merges into a complete table once;
    later candidate runs overlay the snapshot again, carrying the dropped column as NULL, instead
    of rewriting the table on every run."""

    def test_later_candidate_runs_overlay(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        set_source(warehouse, schema, with_region("(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)"))
        run_dbt(["run"])
        folder = table_folder(landing_zone, schema, "orders")
        live = f"from {schema}.src where not deleted"
        for rows, layout in [
            ("(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 1, false)", "table"),
            ("(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C', 3, true), (4, 'd', 3, false)", "view"),
            ("(1, 'a', 1, false), (2, 'B2', 4, false), (4, 'd', 3, false), (5, 'e', 4, false)", "view"),
        ]:
            self.publish(project, warehouse, rows)
            assert self.layers(warehouse, schema)["orders"] == layout
            snapshot = model_output(warehouse, f"select * from {schema}.orders")
            assert_mirror_equals(warehouse, folder, f"select * from {schema}.orders")
            live_ids = [row["id"] for row in model_output(warehouse, f"select id {live}")]
            assert [row["id"] for row in snapshot] == live_ids
            assert findings_for(landing_zone, folder) == []
        # The dropped column is NULL on every row, the base's and the overlay's, in the mirror too.
        assert model_output(warehouse, f"select id, region from {schema}.orders") == [
            {"id": id, "region": None} for id in (1, 2, 4, 5)
        ]
        assert {tuple(pq.read_schema(path).names) for path in data_files(folder)[1:]} == {
            ("id", "name", "updated_at", "region", "__rowMarker__")
        }


IGNORING_MODEL = MODEL.replace("delete_flag='deleted',", "delete_flag='deleted', on_schema_change='ignore',")


@pytest.mark.extended
class TestAnIgnoredColumnStillOverlays(Overlaid):
    """With `on_schema_change='ignore'` a column the model starts returning is neither published
    nor kept in the snapshot, so every later run finds it new again: candidate runs overlay the
    snapshot all the same, instead of rewriting the table on every run."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": IGNORING_MODEL}

    def test_candidate_runs_overlay(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)")
        for rows in [
            "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 1, false)",
            "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C', 3, true), (4, 'd', 3, false)",
        ]:
            set_source(warehouse, schema, with_region(rows))
            run_dbt(["run"])
            assert self.layers(warehouse, schema)["orders"] == "view"
            self.check(project, warehouse, landing_zone, tmp_path)

"""The same model history through the plugin (`type: openmirror`, publishing in-run) and through
the package (`type: spark`, staging, then `dbt-openmirror publish`) gives the same landing zone:
the same numbered files with the same schema and rows, and the same data in the replayed mirror."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from dbt.tests.util import run_dbt

from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror
from tests.support.delta_reader import read_delta
from tests.support.mirror import assert_mirror_equals, table_folder
from tests.support.mirror_oracle import data_files
from tests.support.package_mode import ROOT, InPackageMode, manifest_states, publish

MODEL = """
{{ config(materialized='open_mirror', unique_key='id', on_schema_change='append_new_columns') }}
select * from values {{ var('rows') }} as t({{ var('columns') }})
"""

BASE = "id, name, amount, seen_at"
# Each step's rows: a first load, changes of every kind, no change, new columns, deletes.
STEPS = [
    ("(1, 'a', 1.5D, timestamp'2024-01-01 10:00:00.123456'), (2, 'b', null, null), (3, 'c', 3D, null)", BASE),
    ("(1, 'a', 1.75D, timestamp'2024-01-01 10:00:00.123456'), (3, 'c', 3D, null), (4, 'd', 4D, null)", BASE),
    ("(1, 'a', 1.75D, timestamp'2024-01-01 10:00:00.123456'), (3, 'c', 3D, null), (4, 'd', 4D, null)", BASE),
    (  # a column added with no row to change: a zero-row file carries it
        "(1, 'a', 1.75D, timestamp'2024-01-01 10:00:00.123456', cast(null as string)),"
        " (3, 'c', 3D, null, cast(null as string)), (4, 'd', 4D, null, cast(null as string))",
        BASE + ", note",
    ),
    (
        "(1, 'a', 1.75D, timestamp'2024-01-02 00:00:00', array(1, 2)), (4, 'd', 4D, null, null),"
        " (5, 'e', 5D, null, array(3))",
        BASE + ", tags",
    ),
]


def _vars(rows: str, columns: str) -> str:
    return json.dumps({"rows": rows, "columns": columns})


def _table_folder_contents(folder: Path):
    return [
        (p.name, pq.read_schema(p).remove_metadata(), sorted(map(repr, pq.read_table(p).to_pylist())))
        for p in data_files(folder)
    ]


def _delta_schema(table: Path) -> str:
    schema = None
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            schema = json.loads(line).get("metaData", {}).get("schemaString", schema)
    return schema


class TestPluginAndPackageAgree(InPackageMode):
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    @pytest.fixture(scope="class")
    def plugin_project(self, project, dbt_profile_target, tmp_path_factory):
        """A second project with the same model, published by the plugin into its own landing zone
        and schema. It installs the package too, as a project run locally with the plugin and in
        dbt Cloud with the package does."""
        root = tmp_path_factory.mktemp("plugin_project")
        (root / "models").mkdir()
        (root / "landing_zone").mkdir()
        (root / "models" / "customers.sql").write_text(MODEL)
        (root / "dbt_project.yml").write_text(
            yaml.safe_dump({"name": "plugin_side", "version": "1.0", "config-version": 2, "profile": "plugin"})
        )
        target = {
            **dbt_profile_target,
            "type": "openmirror",
            "schema": f"{project.test_schema}_plugin",
            "landing_zone": str(root / "landing_zone"),
        }
        (root / "profiles.yml").write_text(
            yaml.safe_dump({"plugin": {"target": "default", "outputs": {"default": target}}})
        )
        (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
        run_dbt(["deps", "--project-dir", str(root), "--profiles-dir", str(root)])
        return root

    def test_same_landing_zone_and_mirror(self, project, landing_zone, plugin_project, tmp_path):
        # run_dbt takes the project of the last invocation unless told: name both every time.
        package_args = ["--project-dir", str(project.project_root), "--profiles-dir", str(project.profiles_dir)]
        plugin_args = ["--project-dir", str(plugin_project), "--profiles-dir", str(plugin_project)]
        for rows, columns in STEPS:
            run_dbt(["run", "--vars", _vars(rows, columns), *package_args])
            publish(landing_zone)
            run_dbt(["run", "--vars", _vars(rows, columns), *plugin_args])
        plugin_zone = plugin_project / "landing_zone"

        package_folder = table_folder(landing_zone, project.test_schema, "customers")
        plugin_folder = table_folder(plugin_zone, f"{project.test_schema}_plugin", "customers")
        package_files = _table_folder_contents(package_folder)
        assert len(package_files) == 4  # the unchanged step publishes nothing
        assert package_files[2][0] == "00000000000000000003.parquet" and package_files[2][2] == []
        assert "note" in package_files[2][1].names  # the added column, in a zero-row file
        assert package_files == _table_folder_contents(plugin_folder)
        for name in ("_metadata.json",):
            assert (package_folder / name).read_text() == (plugin_folder / name).read_text()

        mirrored = []
        for zone, schema in ((landing_zone, project.test_schema), (plugin_zone, f"{project.test_schema}_plugin")):
            target = tmp_path / f"mirror_{schema}"
            LocalMirror(LocalStorage(zone), target).replay()
            table = target / schema / "customers"
            mirrored.append((_delta_schema(table), sorted(map(repr, read_delta(table)))))
        assert mirrored[0] == mirrored[1]
        assert len(mirrored[0][1]) == 3


class TestPluginPublishAfterPackageStaging(InPackageMode):
    """One project serving both modes on one landing zone and schema: a run the package staged and
    nobody published before the plugin published the model is superseded by that publish, never
    published over it (a full load put the older state back)."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_a_full_load_staged_before_a_plugin_publish_is_not_published(self, project, warehouse, landing_zone):
        root = Path(project.project_root)
        profile = yaml.safe_load((Path(project.profiles_dir) / "profiles.yml").read_text())
        outputs = profile["test"]["outputs"]
        outputs["plugin"] = {**outputs["default"], "type": "openmirror", "landing_zone": str(landing_zone)}
        plugin_dir = root / "plugin_profile"
        plugin_dir.mkdir()
        (plugin_dir / "profiles.yml").write_text(yaml.safe_dump(profile))
        package_args = ["--project-dir", str(root), "--profiles-dir", str(project.profiles_dir)]
        plugin_args = ["--project-dir", str(root), "--profiles-dir", str(plugin_dir), "--target", "plugin"]
        run_dbt(
            [
                "run",
                "--vars",
                _vars("(1, 'a', 1D, timestamp'2024-01-01 00:00:00'), (2, 'b', 2D, null)", BASE),
                *package_args,
            ]
        )
        publish(landing_zone)
        run_dbt(
            [
                "run",
                "--full-refresh",
                "--vars",
                _vars("(1, 'a', 1D, timestamp'2024-01-01 00:00:00'), (2, 'b2', 2D, null)", BASE),
                *package_args,
            ]
        )
        newest = "(1, 'a', 1D, timestamp'2024-01-01 00:00:00'), (2, 'b3', 2D, null), (3, 'c', 3D, null)"
        [result] = run_dbt(["run", "--vars", _vars(newest, BASE), *plugin_args])
        assert any("recorded superseded" in warning for warning in result.adapter_response["warnings"])
        assert publish(landing_zone) == []
        run_dbt(["parse", *package_args])  # the project's own adapter again, for its queries and teardown
        folder = table_folder(landing_zone, project.test_schema, "customers")
        assert_mirror_equals(warehouse, folder, f"select * from values {newest} as t({BASE})")
        assert manifest_states(landing_zone) == ["published", "superseded"]

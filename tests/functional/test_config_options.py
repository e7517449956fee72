"""Every open_mirror config option, checked in the files it produces."""

import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt

from tests.support.mirror import (
    assert_mirror_equals,
    file_markers,
    findings_for,
    marked_files,
    set_source,
    table_folder,
)
from tests.support.mirror_oracle import data_files

SOURCE = "select * from {{ target.schema }}.src"
ROWS = "select * from values (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e') as t(id, name)"
CHANGED = "select * from values (1, 'a'), (2, 'B'), (3, 'c'), (4, 'd'), (6, 'f') as t(id, name)"


def _model(config: str) -> str:
    return f"{{{{ config(materialized='open_mirror', unique_key='id', {config}) }}}}\n{SOURCE}"


COMPRESSIONS = ["snappy", "zstd", "gzip", "none"]


class TestConfigOptions:
    @pytest.fixture(scope="class")
    def models(self):
        models = {
            "upserts.sql": _model("change_markers='upsert'"),
            "marker_first.sql": _model("row_marker_position='first'"),
            "marker_last.sql": _model("tags=['default position']"),
            "flat.sql": _model("mirror_schema='', mirror_table=target.schema ~ '_flat'"),
            "renamed.sql": _model("mirror_schema='sales', mirror_table='Orders v2'"),
            "split.sql": _model("max_rows_per_file=2"),
        }
        for codec in COMPRESSIONS:
            models[f"codec_{codec}.sql"] = _model(f"parquet_compression='{codec}'")
        return models

    @pytest.fixture(scope="class", autouse=True)
    def two_runs(self, project, warehouse):
        set_source(warehouse, project.test_schema, ROWS)
        run_dbt(["run"])
        set_source(warehouse, project.test_schema, CHANGED)
        run_dbt(["run"])

    def _folder(self, project, landing_zone, table):
        return table_folder(landing_zone, project.test_schema, table)

    def test_upsert_markers(self, project, warehouse, landing_zone):
        folder = self._folder(project, landing_zone, "upserts")
        assert [sorted(m) for m in file_markers(folder)] == [[4] * 5, [2, 4, 4]]
        assert marked_files(folder) == [True, True]  # upserts, so a replayed full load cannot duplicate
        assert_mirror_equals(warehouse, folder, f"select * from {project.test_schema}.src")

    def test_row_marker_position(self, project, landing_zone):
        first = data_files(self._folder(project, landing_zone, "marker_first"))
        last = data_files(self._folder(project, landing_zone, "marker_last"))
        # The full load is insert-only and carries no marker; the change file places it.
        assert [pq.read_schema(p).names for p in first] == [["id", "name"], ["__rowMarker__", "id", "name"]]
        assert [pq.read_schema(p).names for p in last] == [["id", "name"], ["id", "name", "__rowMarker__"]]
        assert str(pq.read_schema(last[1]).field("__rowMarker__").type) == "int32"

    @pytest.mark.parametrize("codec", COMPRESSIONS)
    def test_parquet_compression(self, project, landing_zone, codec):
        files = data_files(self._folder(project, landing_zone, f"codec_{codec}"))
        assert len(files) == 2
        expected = "UNCOMPRESSED" if codec == "none" else codec.upper()
        for path in files:
            metadata = pq.read_metadata(path)
            codecs = {
                metadata.row_group(g).column(c).compression
                for g in range(metadata.num_row_groups)
                for c in range(metadata.num_columns)
            }
            assert codecs == {expected}

    def test_mirror_schema_and_table(self, project, warehouse, landing_zone):
        flat = landing_zone / f"{project.test_schema}_flat"
        renamed = landing_zone / "sales.schema" / "Orders v2"
        for folder in (flat, renamed):
            assert (folder / "_metadata.json").exists()
            assert_mirror_equals(warehouse, folder, f"select * from {project.test_schema}.src")
        assert not (landing_zone / f"{project.test_schema}.schema" / "flat").exists()
        assert not (landing_zone / f"{project.test_schema}.schema" / "renamed").exists()

    def test_max_rows_per_file_numbers_files_continuously(self, project, warehouse, landing_zone):
        folder = self._folder(project, landing_zone, "split")
        sizes = [len(m) for m in file_markers(folder)]
        # 5 initial rows, then 3 changes, in files of at most 2 rows written by parallel tasks.
        assert sum(sizes) == 8 and all(1 <= size <= 2 for size in sizes) and len(sizes) >= 5
        assert [p.name for p in data_files(folder)] == [f"{n:020d}.parquet" for n in range(1, len(sizes) + 1)]
        assert_mirror_equals(warehouse, folder, f"select * from {project.test_schema}.src")

    def test_validator_finds_nothing_but_the_chosen_marker_position(self, project, landing_zone):
        for table in ("upserts", "marker_last", "split", "codec_none", "codec_zstd"):
            assert findings_for(landing_zone, self._folder(project, landing_zone, table)) == []
        found = findings_for(landing_zone, self._folder(project, landing_zone, "marker_first"))
        assert found and all("not the last column" in f for f in found)

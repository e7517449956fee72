"""`dbt-openmirror status` puts the mirror's own status (Files/Monitoring/tables.json and
replicator.json beside the landing zone) next to what was published, for a OneLake landing zone
(through the DFS stand-in) and for the same item mounted as a local folder."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.openmirror.rules.monitoring import describe_replicator, parse_tables
from dbt.adapters.openmirror.tools.cli import main
from tests.support.dfs_emulator import DfsEmulator
from tests.support.onelake import sign_in_with

TABLES = {
    "tables": [
        {
            "sourceSchemaName": "sales",
            "sourceTableName": "orders",
            "status": "Replicating",
            "lastSyncDateTime": "2026-11-22T10:00:00Z",
            "metrics": {"processedBytes": 5206, "processedRows": 50},
            "errorCode": "",
            "errorMessage": "",
        },
        {
            "sourceSchemaName": "",
            "sourceTableName": "customers",
            "status": "Failed",
            "errorCode": "SchemaChangeNotSupported",
            "errorMessage": "Column 'amount' changed type",
        },
    ]
}
REPLICATOR = {"status": "Running", "errorCode": "", "errorMessage": ""}


def test_the_service_documents_are_read_tolerantly():
    tables = parse_tables(json.dumps(TABLES))
    assert tables[("sales", "orders")].describe() == ("Replicating, 50 rows processed, last sync 2026-11-22T10:00:00Z")
    # No schema name: the mirrored database's default schema; no metrics: nothing invented.
    assert tables[("dbo", "customers")].describe() == ("Failed: SchemaChangeNotSupported: Column 'amount' changed type")
    assert parse_tables('{"tables": [{"status": "x"}]}') == {}
    assert describe_replicator(json.dumps(REPLICATOR)) == "Running"
    assert describe_replicator('{"status": "Stopped", "errorMessage": "capacity paused"}') == (
        "Stopped: capacity paused"
    )
    with pytest.raises(ValueError, match="tables.json is not valid JSON"):
        parse_tables("{")


def _item(files_folder):
    """A mirrored database item's Files: two published tables and the service's Monitoring."""
    landing_zone = files_folder / "LandingZone"
    for folder, numbers in ((landing_zone / "sales.schema" / "orders", (1, 2, 3)), (landing_zone / "customers", (1,))):
        folder.mkdir(parents=True)
        (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
        for number in numbers:
            table = pa.table({"id": [number], "__rowMarker__": pa.array([0], pa.int32())})
            pq.write_table(table, folder / f"{number:020d}.parquet")
    processed = landing_zone / "sales.schema" / "orders" / "_ProcessedFiles"
    processed.mkdir()
    for number in (1, 2):
        (landing_zone / "sales.schema" / "orders" / f"{number:020d}.parquet").rename(
            processed / f"{number:020d}.parquet"
        )
    (files_folder / "Monitoring").mkdir()
    (files_folder / "Monitoring" / "tables.json").write_text(json.dumps(TABLES))
    (files_folder / "Monitoring" / "replicator.json").write_text(json.dumps(REPLICATOR))


def _table_lines(output):
    return {line.split()[0]: line for line in output.splitlines() if line.startswith(("sales.", "dbo."))}


def _check(output):
    assert output.splitlines()[0] == "mirrored database (Files/Monitoring): Running"
    lines = _table_lines(output)
    assert lines["sales.orders"].split()[1:3] == ["3", "1"]  # last published file, waiting
    assert lines["sales.orders"].endswith("Replicating, 50 rows processed, last sync 2026-11-22T10:00:00Z")
    assert lines["dbo.customers"].endswith("Failed: SchemaChangeNotSupported: Column 'amount' changed type")


def test_status_of_a_onelake_landing_zone(tmp_path, monkeypatch, capsys):
    with DfsEmulator(tmp_path / "onelake", filesystems=["ws"]) as dfs:
        _item(dfs.root / "ws" / "item" / "Files")
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", dfs.ca_path)
        sign_in_with(monkeypatch, "t")
        assert main(["status", f"{dfs.url}/ws/item/Files/LandingZone"]) == 0
        assert dfs.recorded("read", path="/ws/item/Files/Monitoring/tables.json")
    _check(capsys.readouterr().out)


def test_status_of_a_mounted_item_and_without_monitoring(tmp_path, capsys):
    _item(tmp_path / "item" / "Files")
    assert main(["status", str(tmp_path / "item" / "Files" / "LandingZone")]) == 0
    _check(capsys.readouterr().out)
    (tmp_path / "item" / "Files" / "Monitoring" / "tables.json").unlink()
    assert main(["status", str(tmp_path / "item" / "Files" / "LandingZone")]) == 0
    assert _table_lines(capsys.readouterr().out)["sales.orders"].rstrip().endswith("-")


def test_a_refused_sign_in_is_a_message_not_a_traceback(tmp_path, monkeypatch, capsys):
    with DfsEmulator(tmp_path / "onelake", filesystems=["ws"], required_token="right") as dfs:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", dfs.ca_path)
        sign_in_with(monkeypatch, "wrong")
        assert main(["status", f"{dfs.url}/ws/item/Files/LandingZone"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("dbt-openmirror status: ") and "wrong audience" in error

"""The OneLake storage backend against the local DFS stand-in (tests/support/dfs_emulator), driven by
the real azure-storage-file-datalake SDK over HTTPS: every interface method, the create-only
rename as a raw DFS call, retries, fail-fast authentication errors, streamed uploads, folder
deletes that wait for the service."""

import re
import time
from pathlib import PurePosixPath

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from azure.core.exceptions import ClientAuthenticationError

from dbt.adapters.openmirror.errors import (
    LandingZoneAccessError,
    LandingZoneServiceError,
    PublishError,
    TargetExistsError,
    WriteConflictError,
)
from dbt.adapters.openmirror.storage import open_landing_zone
from dbt.adapters.openmirror.storage.azure_auth import AzureAuth
from dbt.adapters.openmirror.storage.location import parse_location
from dbt.adapters.openmirror.storage.onelake import OneLakeStorage
from dbt.adapters.openmirror.storage.retry import RetrySettings
from tests.support.dfs_emulator import STORAGE_SCOPE, DfsEmulator, FixedTokenCredential

ROOT = "item/Files/LandingZone"
FAST_RETRY = RetrySettings(attempts=4, backoff_seconds=0.05, max_backoff_seconds=0.2)


@pytest.fixture(scope="module")
def dfs(tmp_path_factory):
    with DfsEmulator(tmp_path_factory.mktemp("dfs"), filesystems=["ws"]) as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def trust(dfs, monkeypatch):
    """The stand-in's self-signed certificate, trusted the standard way; no faults left over."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", dfs.ca_path)
    dfs.faults.clear()
    dfs.clear_records()


@pytest.fixture
def root(dfs, request):
    """A landing zone of its own per test (a fresh item folder)."""
    return f"{re.sub('[^A-Za-z0-9_-]+', '_', request.node.name)[:80]}/Files/LandingZone"


def open_storage(dfs, root, credential=None, **options):
    options.setdefault("retry", FAST_RETRY)
    return OneLakeStorage(parse_location(f"{dfs.url}/ws/{root}"), credential or FixedTokenCredential(), **options)


@pytest.fixture
def storage(dfs, root):
    return open_storage(dfs, root)


def on_disk(dfs, root, path=""):
    return dfs.root / "ws" / root / path


def test_small_files_lists_sizes_and_deletes(dfs, root, storage):
    assert storage.read_text("t/_metadata.json") is None and storage.list_names("t") == []
    storage.write_text("t/_metadata.json", '{"keyColumns": ["id"]}\n', create_only=True)
    storage.write_text("t/_dbt_openmirror.json", "one", create_only=False)
    storage.write_text("t/_dbt_openmirror.json", "two", create_only=False)  # replaced
    assert storage.read_text("t/_dbt_openmirror.json") == "two"
    assert on_disk(dfs, root, "t/_metadata.json").read_text() == '{"keyColumns": ["id"]}\n'
    assert storage.list_names("t") == ["_dbt_openmirror.json", "_metadata.json"]  # no temporary left
    assert storage.list_names("") == ["t"]
    assert storage.list_names("t/_metadata.json") == []  # a file is not a folder
    assert storage.size("t/_metadata.json") == len('{"keyColumns": ["id"]}\n')
    storage.delete_file("t/_metadata.json")
    storage.delete_file("t/_metadata.json")  # already gone: nothing happens
    storage.delete_folder("t")
    storage.delete_folder("t")
    assert not on_disk(dfs, root, "t").exists()
    # Every request carried a token for the Storage audience.
    assert set(dfs.tokens) == {"test-token"}


def test_the_token_is_asked_for_the_storage_audience(dfs, root):
    credential = FixedTokenCredential()
    open_storage(dfs, root, credential).list_names("")
    assert credential.scopes and set(credential.scopes) == {STORAGE_SCOPE}


def test_a_landing_zone_opened_with_a_credential_signs_in_with_it(dfs, root):
    storage = open_landing_zone(f"{dfs.url}/ws/{root}", AzureAuth("cli"), credential=FixedTokenCredential("given"))
    assert isinstance(storage, OneLakeStorage) and storage.list_names("") == []
    assert dfs.tokens and set(dfs.tokens) == {"given"}


def test_spark_uri_is_the_abfss_form(dfs, storage):
    assert storage.spark_uri("_scratchPad/r1") == f"abfss://ws@{dfs.url[8:]}/{storage.where.root}/_scratchPad/r1"


def test_check_writable_leaves_nothing(dfs, root, storage):
    storage.check_writable("_scratchPad/dbt-openmirror/debug-1")
    assert storage.list_names("_scratchPad/dbt-openmirror") == []


def test_create_only_rename_is_one_dfs_call_that_never_overwrites(dfs, root, storage):
    storage.write_text("t/a.txt", "one", create_only=True)
    storage.write_text("t/b.txt", "two", create_only=True)
    dfs.clear_records()
    with pytest.raises(TargetExistsError, match="t/a.txt already exists"):
        storage.rename_create_only("t/b.txt", "t/a.txt")
    assert on_disk(dfs, root, "t/a.txt").read_text() == "one"
    assert on_disk(dfs, root, "t/b.txt").read_text() == "two"
    (rename,) = dfs.recorded("rename")
    assert rename.method == "PUT" and rename.path == f"/ws/{root}/t/a.txt"
    assert rename.header("If-None-Match") == "*"
    assert rename.header("x-ms-rename-source") == f"/ws/{root}/t/b.txt"
    assert rename.header("Authorization") == "Bearer <redacted>"
    storage.rename_create_only("t/b.txt", "t/sub/c.txt")  # creates the missing parent folder
    assert on_disk(dfs, root, "t/sub/c.txt").read_text() == "two" and not on_disk(dfs, root, "t/b.txt").exists()
    with pytest.raises(TargetExistsError):
        storage.write_text("t/a.txt", "three", create_only=True)
    assert storage.list_names("t") == ["a.txt", "sub"]  # the temporary file was removed


def test_a_conditional_write_is_a_rename_with_if_match(dfs, root, storage):
    first = storage.write_text_if("t/j.json", "one", None)
    assert dfs.recorded("rename")[-1].header("If-None-Match") == "*"
    with pytest.raises(WriteConflictError):
        storage.write_text_if("t/j.json", "two", None)
    assert storage.read_versioned("t/j.json") == ("one", first)
    dfs.clear_records()
    second = storage.write_text_if("t/j.json", "two", first)
    (rename,) = dfs.recorded("rename")
    assert rename.header("If-Match") == first and rename.status == 201
    with pytest.raises(WriteConflictError):
        storage.write_text_if("t/j.json", "three", first)
    assert dfs.recorded("rename")[-1].status == 412
    assert on_disk(dfs, root, "t/j.json").read_text() == "two"
    assert storage.read_versioned("t/j.json").version == second
    assert storage.list_names("t") == ["j.json"]  # refused writes leave no temporary file


def test_a_conditional_write_whose_answer_was_lost_counts_once(dfs, root, storage):
    first = storage.write_text_if("t/j.json", "one", None)
    dfs.inject(operation="rename", drop=True, after_operation=True)
    second = storage.write_text_if("t/j.json", "two", first)
    assert on_disk(dfs, root, "t/j.json").read_text() == "two"
    assert storage.read_versioned("t/j.json").version == second


def test_two_processes_writing_conditionally_lose_no_update(dfs, root):
    import subprocess
    import sys

    from tests.conftest import ROOT

    command = [sys.executable, "-m", "tests.support.cas_counter", f"{dfs.url}/ws/{root}", "t/counter.txt", "25"]
    workers = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    conflicts = [int(worker.communicate(timeout=300)[0]) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0]
    assert on_disk(dfs, root, "t/counter.txt").read_text() == "50\n"
    print(f"{sum(conflicts)} conflicts retried")


def test_a_rename_whose_answer_was_lost_counts_once(dfs, root, storage):
    storage.write_text("t/staged.parquet", "data", create_only=True)
    dfs.clear_records()
    dfs.inject(operation="rename", drop=True, after_operation=True)
    storage.rename_create_only("t/staged.parquet", "t/00000000000000000001.parquet")
    assert on_disk(dfs, root, "t/00000000000000000001.parquet").read_text() == "data"
    assert len(dfs.recorded("rename")) == 2  # the retry found its own work done


def _parquet(tmp_path, rows):
    table = pa.table({"id": list(range(rows)), "__rowMarker__": pa.array([0] * rows, pa.int32())})
    path = tmp_path / f"part-{rows}.parquet"
    pq.write_table(table, path)
    return path


def test_footers_are_read_with_ranged_requests(dfs, root, storage, tmp_path):
    local = _parquet(tmp_path, 200_000)
    storage.upload_file(local, "_scratchPad/r1/part-0.parquet")
    dfs.clear_records()
    with storage.open_read("_scratchPad/r1/part-0.parquet") as handle:
        assert pq.read_metadata(handle).num_rows == 200_000
    reads = dfs.recorded("read")
    assert reads and all(r.header("x-ms-range") or r.header("Range") for r in reads)
    with storage.open_read("_scratchPad/r1/part-0.parquet") as handle:
        assert pq.read_table(handle).equals(pq.read_table(local))
        handle.seek(-4, 2)
        assert handle.read() == b"PAR1"


def test_large_uploads_stream_in_parallel_chunks(dfs, root, tmp_path):
    storage = open_storage(dfs, root, upload_chunk_bytes=256 * 1024, upload_concurrency=3)
    local = tmp_path / "big.bin"
    local.write_bytes(bytes(range(256)) * 4 * 1024 * 5 + b"tail")  # 5 MiB + 4 bytes
    dfs.clear_records()
    storage.upload_file(local, "_scratchPad/r2/big.bin")
    assert on_disk(dfs, root, "_scratchPad/r2/big.bin").read_bytes() == local.read_bytes()
    appends = dfs.recorded("append")
    assert len(appends) == 21
    assert max(int(a.header("Content-Length")) for a in appends) == 256 * 1024
    assert len(dfs.recorded("flush")) == 1


@pytest.mark.parametrize("status", [429, 503])
def test_throttling_is_retried_honouring_retry_after(dfs, root, status):
    # A backoff of 5 s would make this slow; the service's Retry-After (0.2 s) is what counts.
    storage = open_storage(dfs, root, retry=RetrySettings(attempts=4, backoff_seconds=5))
    storage.write_text("t/x.txt", "x", create_only=True)
    dfs.clear_records()
    dfs.inject(status=status, times=2, operation="read", headers={"Retry-After": "0.2"})
    started = time.monotonic()
    assert storage.read_text("t/x.txt") == "x"
    assert 0.4 <= time.monotonic() - started < 3
    assert [r.status for r in dfs.recorded("read")] == [status, status, 206]


def test_transient_faults_without_retry_after_back_off_then_give_up(dfs, root, storage):
    storage.write_text("t/x.txt", "x", create_only=True)
    dfs.inject(status=500, times=1, operation="read")
    dfs.inject(operation="read", drop=True, times=1)  # a connection lost mid-request
    assert storage.read_text("t/x.txt") == "x"
    dfs.clear_records()
    dfs.inject(status=503, times=10, operation="list_paths")
    with pytest.raises(LandingZoneServiceError, match="listing t in .* failed: HTTP 503 ServerBusy"):
        storage.list_names("t")
    assert len(dfs.recorded("list_paths")) == FAST_RETRY.attempts


def _write(storage, tmp_path, how):
    """A small file (journal, lease, metadata: a temporary name, then a rename) or a staged upload."""
    if how == "small":
        storage.write_text("t/x.json", "{}", create_only=True)
        return "t/x.json", b"{}"
    local = tmp_path / "part.parquet"
    local.write_bytes(bytes(range(256)) * 40)
    storage.upload_file(local, "_scratchPad/r/part.parquet")
    return "_scratchPad/r/part.parquet", local.read_bytes()


@pytest.mark.parametrize("how", ["small", "upload"])
@pytest.mark.parametrize(
    "fault",
    [
        {"status": 429},
        {"status": 502},
        {"status": 408},
        {"drop": True},
        # The service carried the request out, but its answer was lost: the retried flush finds
        # the file's ETag changed by its own first attempt.
        {"status": 503, "after_operation": True},
        {"drop": True, "after_operation": True},
    ],
    ids=["429", "502", "408", "dropped", "503-after-done", "dropped-after-done"],
)
@pytest.mark.parametrize("operation", ["append", "flush"])
def test_a_transient_fault_on_an_append_or_flush_is_retried(dfs, root, storage, tmp_path, how, fault, operation):
    """Every write uploads by DFS append and flush (PATCH), which azure-core retries only on
    500/503/504; an upload to a name only this run uses can be sent again whole."""
    dfs.inject(operation=operation, times=1, **fault)
    path, data = _write(storage, tmp_path, how)
    assert on_disk(dfs, root, path).read_bytes() == data
    assert [p.name for p in on_disk(dfs, root, path).parent.iterdir()] == [PurePosixPath(path).name]


def test_a_small_write_that_keeps_failing_leaves_no_temporary_file(dfs, root, storage, tmp_path):
    """(A staged upload that fails is discarded with its run's staged folder.)"""
    dfs.inject(operation="flush", status=502, times=100)
    with pytest.raises(LandingZoneServiceError, match="failed: HTTP 502"):
        _write(storage, tmp_path, "small")
    assert list(on_disk(dfs, root, "t").iterdir()) == []


@pytest.mark.parametrize(
    "retry_after",
    ["86400", "Fri, 31 Dec 2099 23:59:59 GMT", "soon", "", "1e12", "inf", "-5"],
)
def test_retry_after_is_capped_at_the_longest_backoff_and_a_malformed_one_ignored(dfs, root, retry_after):
    storage = open_storage(dfs, root, retry=RetrySettings(attempts=3, backoff_seconds=0.05, max_backoff_seconds=0.3))
    storage.write_text("t/x.txt", "x", create_only=True)
    dfs.inject(status=429, times=1, operation="read", headers={"Retry-After": retry_after})
    started = time.monotonic()
    assert storage.read_text("t/x.txt") == "x"
    assert time.monotonic() - started < 3


def test_a_read_cut_short_names_what_happened(dfs, root, storage):
    storage.write_text("t/x.txt", "x" * 1000, create_only=True)
    dfs.inject(operation="read", times=100, truncate=True)
    with pytest.raises(LandingZoneServiceError) as failure:
        storage.read_text("t/x.txt")
    assert "HTTP None" not in str(failure.value)
    assert "reading t/x.txt" in str(failure.value)


@pytest.mark.parametrize(
    "status, cause",
    [
        (401, "token for the wrong audience \\(it must be https://storage.azure.com/.default\\)"),
        (403, "no write permission on the mirrored database item"),
    ],
)
def test_authentication_and_permission_errors_fail_fast(dfs, root, storage, status, cause):
    dfs.inject(status=status, times=5, operation="create_file")
    with pytest.raises(LandingZoneAccessError, match=cause):
        storage.write_text("t/x.txt", "x", create_only=True)
    assert len(dfs.recorded("create_file")) == 1


def test_a_credential_that_cannot_get_a_token_is_named_and_its_secret_masked(dfs, root):
    secret = "Zq8~not-for-logs"

    class Failing:
        def get_token(self, *scopes, **kwargs):
            raise ClientAuthenticationError(f"AADSTS7000215: Invalid client secret provided: {secret}")

    auth = AzureAuth("service_principal", "t", "c", secret)
    storage = open_storage(dfs, root, credential=Failing(), auth=auth)
    with pytest.raises(LandingZoneAccessError) as failure:
        storage.list_names("")
    message = str(failure.value)
    assert "no token could be obtained with auth: service_principal" in message
    assert secret not in message and "****" in message


def test_deleting_a_folder_retries_while_the_service_holds_it_and_waits_until_gone(dfs, root, storage):
    storage.write_text("t/00000000000000000001.parquet", "x", create_only=True)
    dfs.inject(status=409, code="OperationNotAllowedOnThePath", times=2, operation="delete")
    dfs.defer_delete(f"/ws/{root}/t", requests=3)
    storage.delete_folder("t")
    assert not on_disk(dfs, root, "t").exists()
    assert [r.status for r in dfs.recorded("delete")][:3] == [409, 409, 200]


def test_a_folder_that_never_goes_away_is_a_clear_error(dfs, root):
    storage = open_storage(dfs, root, folder_delete_timeout=0.5)
    storage.write_text("t/x.txt", "x", create_only=True)
    dfs.inject(status=409, code="OperationNotAllowedOnThePath", times=1000, operation="delete")
    with pytest.raises(PublishError, match="still there 0 s after deleting it: the mirroring service may still"):
        storage.delete_folder("t")
    with pytest.raises(Exception, match="refusing to delete"):
        storage.delete_folder("")


def test_last_modified_is_the_services_time_of_the_write(dfs, root, storage):
    storage.write_text("t/a.json", "{}", create_only=True)
    written = on_disk(dfs, root, "t/a.json").stat().st_mtime
    # HTTP dates carry whole seconds.
    assert storage.last_modified("t/a.json") == pytest.approx(written, abs=1.0)
    with pytest.raises(FileNotFoundError):
        storage.last_modified("t/missing.json")


def test_one_listing_gives_sizes_and_times(dfs, root, storage):
    storage.write_text("t/a.json", "{}", create_only=True)
    storage.write_text("t/sub/b.json", "[1]", create_only=True)
    dfs.clear_records()
    files = storage.list_files("t")
    assert [(f.name, f.is_folder) for f in files] == [("a.json", False), ("sub", True)]
    assert files[0].size == 2
    assert files[0].last_modified == pytest.approx(on_disk(dfs, root, "t/a.json").stat().st_mtime, abs=1.0)
    assert len(dfs.recorded()) == 1  # one listing call, not one per file
    assert storage.list_files("missing") == [] and storage.list_files("t/a.json") == []
    assert storage.exists("") and storage.exists("t") and storage.exists("t/a.json")
    assert not storage.exists("missing")


def test_monitoring_files_are_written_beside_the_landing_zone(dfs, root, storage):
    assert storage.write_monitoring("tables.json", '{"tables": []}\n')
    assert storage.write_monitoring("tables.json", '{"tables": [1]}\n')  # replaced whole
    item = root.split("/")[0]
    monitoring = dfs.root / "ws" / item / "Files" / "Monitoring"
    assert sorted(p.name for p in monitoring.iterdir()) == ["tables.json"]  # no temporary left
    assert storage.read_monitoring("tables.json") == '{"tables": [1]}\n'
    elsewhere = open_storage(dfs, f"{item}/Files/other")
    assert not elsewhere.write_monitoring("tables.json", "{}")


@pytest.mark.parametrize(
    "path",
    ["", ".", "/", "./", "_scratchPad", "_scratchPad/", "./_scratchPad/.", "_SCRATCHPAD", "..", "t/../..", "t\\..\\.."],
)
def test_deletes_refuse_the_root_the_scratch_pad_and_paths_outside(dfs, root, storage, path):
    storage.write_text("t/f.txt", "kept", create_only=False)
    storage.write_text("_scratchPad/dbt-openmirror/run-1/f.txt", "kept", create_only=False)
    dfs.clear_records()
    with pytest.raises(PublishError, match="refusing to delete"):
        storage.delete_folder(path)
    with pytest.raises(PublishError, match="refusing to delete"):
        storage.delete_file(path)
    assert dfs.recorded("delete") == []
    assert storage.read_text("t/f.txt") == "kept"
    storage.delete_folder("_scratchPad/dbt-openmirror/run-1")  # strictly inside: allowed
    assert storage.list_names("_scratchPad/dbt-openmirror") == []

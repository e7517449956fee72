"""The DFS emulator, driven through the real azure-storage-file-datalake SDK as OneLake would be."""

import os
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.core.rest import HttpRequest
from azure.storage.filedatalake import DataLakeServiceClient, ExponentialRetry

from tests.support.dfs_emulator import STORAGE_SCOPE, DfsEmulator, FixedTokenCredential

LANDING_ZONE = "item/Files/LandingZone"
API_VERSION = {"x-ms-version": "2021-06-08"}
NO_WAIT_RETRY = {"initial_backoff": 0, "increment_base": 0, "random_jitter_range": 0}


@pytest.fixture
def dfs(dfs_emulator):
    return dfs_emulator


@pytest.fixture
def credential():
    return FixedTokenCredential()


def file_system_client(dfs, credential, **client_options):
    client_options.setdefault("retry_policy", ExponentialRetry(retry_total=3, **NO_WAIT_RETRY))
    service = DataLakeServiceClient(dfs.url, credential=credential, connection_verify=dfs.ca_path, **client_options)
    return service.get_file_system_client("workspace")


@pytest.fixture
def workspace(dfs, credential):
    return file_system_client(dfs, credential)


def raw_rename(destination_client, source_path, create_only=True):
    """The create-only DFS rename as a raw request through the SDK client's own pipeline."""
    headers = {
        "x-ms-rename-source": f"/{destination_client.file_system_name}/{quote(source_path)}",
        **API_VERSION,
    }
    if create_only:
        headers["If-None-Match"] = "*"
    request = HttpRequest("PUT", destination_client.url + "?mode=legacy", headers=headers)
    return destination_client._client._send_request(request)


def on_disk(dfs, path):
    return (dfs.root / "workspace" / path).read_bytes()


def test_requests_carry_a_storage_token_over_verified_tls(dfs, credential, workspace):
    workspace.get_file_client(f"{LANDING_ZONE}/T/_a").upload_data(b"abc", overwrite=True)

    assert set(credential.scopes) == {STORAGE_SCOPE}
    assert dfs.tokens and set(dfs.tokens) == {credential.token}
    assert all(r.header("Authorization") == "Bearer <redacted>" for r in dfs.requests)
    assert on_disk(dfs, f"{LANDING_ZONE}/T/_a") == b"abc"


def test_ca_bundle_from_the_environment_is_honoured(dfs, credential, monkeypatch):
    service = DataLakeServiceClient(dfs.url, credential=credential, retry_total=0)
    client = service.get_file_system_client("workspace").get_file_client("a")
    with pytest.raises(ServiceRequestError, match="CERTIFICATE_VERIFY_FAILED"):
        client.upload_data(b"x", overwrite=True)

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", dfs.ca_path)
    client.upload_data(b"x", overwrite=True)
    assert on_disk(dfs, "a") == b"x"


def test_chunked_upload_appends_in_parallel_and_downloads_in_ranges(dfs, workspace):
    data = os.urandom(3 * 1024 * 1024 + 17)
    client = workspace.get_file_client(f"{LANDING_ZONE}/T/big.bin")
    client.upload_data(data, overwrite=True, chunk_size=256 * 1024, max_concurrency=4)

    appends = dfs.recorded("append")
    assert len(appends) == 13
    assert sorted(int(r.query["position"]) for r in appends) == list(range(0, len(data), 256 * 1024))
    assert [r.query["position"] for r in dfs.recorded("flush")] == [str(len(data))]
    assert on_disk(dfs, f"{LANDING_ZONE}/T/big.bin") == data
    assert client.download_file().readall() == data
    assert client.download_file(offset=1000, length=5000).readall() == data[1000:6000]
    assert client.download_file(offset=len(data) - 10).readall() == data[-10:]


def test_an_empty_file_downloads_after_the_invalid_range_answer(dfs, workspace):
    client = workspace.get_file_client("t/empty")
    client.create_file()
    assert client.download_file().readall() == b""
    assert [r.status for r in dfs.recorded("read")] == [416, 200]


def test_appended_data_is_invisible_until_flushed(dfs, workspace):
    client = workspace.get_file_client("t/_f")
    client.create_file()
    client.append_data(b"hello ", offset=0, length=6)
    client.append_data(b"world", offset=6, length=5)
    assert client.download_file().readall() == b""
    assert client.get_file_properties().size == 0

    client.flush_data(11)
    assert client.download_file().readall() == b"hello world"
    assert on_disk(dfs, "t/_f") == b"hello world"


def test_flush_of_non_contiguous_data_is_refused(dfs, workspace):
    client = workspace.get_file_client("t/_f")
    client.create_file()
    client.append_data(b"abc", offset=0, length=3)
    client.append_data(b"xyz", offset=5, length=3)
    with pytest.raises(HttpResponseError) as refused:
        client.flush_data(8)
    assert refused.value.status_code == 400
    assert refused.value.error_code == "InvalidFlushPosition"
    assert on_disk(dfs, "t/_f") == b""


def test_upload_without_overwrite_needs_a_missing_condition_to_hold(workspace):
    # As on the real service: the SDK appends without creating, then flushes If-None-Match: *.
    with pytest.raises(ResourceNotFoundError):
        workspace.get_file_client("t/new").upload_data(b"a")
    existing = workspace.get_file_client("t/old")
    existing.upload_data(b"a", overwrite=True)
    with pytest.raises(ResourceModifiedError):
        existing.upload_data(b"b")
    assert existing.download_file().readall() == b"a"


def test_create_only_file_creation_is_refused_when_the_path_exists(dfs, workspace):
    client = workspace.get_file_client("t/_f")
    client.upload_data(b"first", overwrite=True)
    with pytest.raises(ResourceExistsError) as refused:
        client.create_file(match_condition=MatchConditions.IfMissing)
    assert refused.value.error_code == "PathAlreadyExists"
    assert dfs.recorded("create_file")[-1].header("If-None-Match") == "*"
    assert on_disk(dfs, "t/_f") == b"first"


def test_list_paths_recursive_or_not_with_continuation(dfs, workspace):
    names = [f"{LANDING_ZONE}/T/{n:020d}.parquet" for n in range(1, 6)]
    for name in names:
        workspace.get_file_client(name).upload_data(name.encode(), overwrite=True)
    workspace.get_directory_client(f"{LANDING_ZONE}/T/_ProcessedFiles").create_directory()

    listed = list(workspace.get_paths(f"{LANDING_ZONE}/T", recursive=False, max_results=2))
    assert [p.name for p in listed] == sorted(names + [f"{LANDING_ZONE}/T/_ProcessedFiles"])
    assert [p.is_directory for p in listed] == [False] * 5 + [True]
    assert [p.content_length for p in listed[:5]] == [len(n) for n in names]
    pages = dfs.recorded("list_paths")
    assert len(pages) == 3
    assert "continuation" not in pages[0].query and all("continuation" in p.query for p in pages[1:])

    everything = [p.name for p in workspace.get_paths("item", recursive=True)]
    assert everything == sorted(
        ["item/Files", LANDING_ZONE, f"{LANDING_ZONE}/T", f"{LANDING_ZONE}/T/_ProcessedFiles"] + names
    )
    assert [p.name for p in workspace.get_paths("item", recursive=False)] == ["item/Files"]


def test_listing_a_missing_directory_is_not_found(workspace):
    with pytest.raises(ResourceNotFoundError) as missing:
        list(workspace.get_paths("nowhere"))
    assert missing.value.error_code == "PathNotFound"


def test_directories_create_and_delete_recursively(dfs, workspace):
    folder = workspace.get_directory_client(f"{LANDING_ZONE}/T")
    folder.create_directory()
    assert (dfs.root / "workspace" / LANDING_ZONE / "T").is_dir()
    assert folder.get_directory_properties().metadata == {"hdi_isfolder": "true"}
    folder.get_file_client("_metadata.json").upload_data(b"{}", overwrite=True)

    folder.delete_directory()
    assert not (dfs.root / "workspace" / LANDING_ZONE / "T").exists()
    assert dfs.recorded("delete")[-1].query["recursive"] == "true"
    assert not folder.exists()
    with pytest.raises(ResourceNotFoundError):
        folder.delete_directory()


def test_non_recursive_delete_of_a_full_directory_is_refused(dfs, workspace):
    workspace.get_file_client("t/a").upload_data(b"a", overwrite=True)
    client = workspace.get_directory_client("t")
    request = HttpRequest("DELETE", client.url + "?recursive=false", headers=API_VERSION)
    response = client._client._send_request(request)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "DirectoryNotEmpty"
    assert on_disk(dfs, "t/a") == b"a"


def test_etags_change_on_every_write_and_agree_with_the_listing(workspace):
    client = workspace.get_file_client("t/f")
    client.upload_data(b"one", overwrite=True)
    first = client.get_file_properties().etag
    assert client.get_file_properties().etag == first
    (listed,) = workspace.get_paths("t")
    assert f'"{listed.etag}"' == first

    client.upload_data(b"two", overwrite=True)
    second = client.get_file_properties().etag
    assert second != first
    with pytest.raises(ResourceModifiedError):
        client.upload_data(b"three", overwrite=True, etag=first, match_condition=MatchConditions.IfNotModified)
    assert client.download_file().readall() == b"two"


def test_raw_create_only_rename_through_the_sdk_pipeline(dfs, credential, workspace):
    workspace.get_file_client(f"{LANDING_ZONE}/T/_00000000000000000001.parquet").upload_data(b"data", overwrite=True)
    final = workspace.get_file_client(f"{LANDING_ZONE}/T/00000000000000000001.parquet")
    response = raw_rename(final, f"{LANDING_ZONE}/T/_00000000000000000001.parquet")

    assert response.status_code == 201
    assert response.headers["ETag"] == final.get_file_properties().etag
    assert final.download_file().readall() == b"data"
    assert not workspace.get_file_client(f"{LANDING_ZONE}/T/_00000000000000000001.parquet").exists()
    (rename,) = dfs.recorded("rename")
    assert rename.header("If-None-Match") == "*"
    assert rename.header("x-ms-rename-source") == (f"/workspace/{LANDING_ZONE}/T/_00000000000000000001.parquet")
    assert rename.header("Authorization") == "Bearer <redacted>" and set(credential.scopes) == {STORAGE_SCOPE}


def test_rename_onto_an_existing_name_is_refused_and_changes_nothing(dfs, workspace):
    workspace.get_file_client("t/_new").upload_data(b"new", overwrite=True)
    workspace.get_file_client("t/published").upload_data(b"published", overwrite=True)

    response = raw_rename(workspace.get_file_client("t/published"), "t/_new")
    assert response.status_code == 409
    assert response.headers["x-ms-error-code"] == "PathAlreadyExists"
    assert response.json()["error"]["code"] == "PathAlreadyExists"
    assert on_disk(dfs, "t/_new") == b"new" and on_disk(dfs, "t/published") == b"published"

    # Without the condition a rename replaces the destination, as on the service.
    assert raw_rename(workspace.get_file_client("t/published"), "t/_new", create_only=False).status_code == 201
    assert on_disk(dfs, "t/published") == b"new"


def test_concurrent_create_only_renames_onto_one_name_let_exactly_one_win(dfs, workspace):
    sources = [f"t/_writer{n}" for n in range(4)]
    for source in sources:
        workspace.get_file_client(source).upload_data(source.encode(), overwrite=True)
    final = workspace.get_file_client("t/00000000000000000001.parquet")
    with ThreadPoolExecutor(len(sources)) as pool:
        statuses = list(pool.map(lambda source: raw_rename(final, source).status_code, sources))

    assert sorted(statuses) == [201, 409, 409, 409]
    winner = sources[statuses.index(201)]
    assert on_disk(dfs, "t/00000000000000000001.parquet") == winner.encode()
    assert {p.name for p in workspace.get_paths("t")} == {
        "t/00000000000000000001.parquet",
        *(s for s in sources if s != winner),
    }


def test_rename_honours_a_source_etag_condition(dfs, workspace):
    source = workspace.get_file_client("t/_a")
    source.upload_data(b"a", overwrite=True)
    stale = source.get_file_properties().etag
    source.upload_data(b"b", overwrite=True)
    destination = workspace.get_file_client("t/a")
    request = HttpRequest(
        "PUT",
        destination.url,
        headers={"x-ms-rename-source": "/workspace/t/_a", "x-ms-source-if-match": stale, **API_VERSION},
    )
    response = destination._client._send_request(request)
    assert response.status_code == 412
    assert response.json()["error"]["code"] == "SourceConditionNotMet"
    assert not destination.exists()


def test_listing_wire_format_is_the_services(dfs, workspace):
    workspace.get_file_client("t/a").upload_data(b"abc", overwrite=True)
    client = workspace.get_directory_client("t")
    url = f"{dfs.url}/workspace?resource=filesystem&recursive=true"
    response = client._client._send_request(HttpRequest("GET", url, headers=API_VERSION))

    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    folder, file = response.json()["paths"]
    assert folder["name"] == "t" and folder["isDirectory"] == "true"
    assert file["name"] == "t/a" and "isDirectory" not in file
    assert file["contentLength"] == "3"
    assert f'"{file["etag"]}"' == workspace.get_file_client("t/a").get_file_properties().etag


def test_rename_of_a_missing_source_is_source_path_not_found(workspace):
    response = raw_rename(workspace.get_file_client("t/dest"), "t/missing")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "SourcePathNotFound"


def test_directories_rename_with_their_contents_through_the_sdk(dfs, workspace):
    workspace.get_file_client("_scratchPad/run/a").upload_data(b"a", overwrite=True)
    workspace.get_file_client("_scratchPad/run/sub/b").upload_data(b"b", overwrite=True)
    workspace.get_directory_client("T").create_directory()

    workspace.get_directory_client("_scratchPad/run").rename_directory("workspace/T/run")
    assert on_disk(dfs, "T/run/a") == b"a" and on_disk(dfs, "T/run/sub/b") == b"b"
    assert not (dfs.root / "workspace/_scratchPad/run").exists()


def test_rename_needs_the_destination_parent(workspace):
    workspace.get_file_client("t/a").upload_data(b"a", overwrite=True)
    response = raw_rename(workspace.get_file_client("missing/a"), "t/a")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "RenameDestinationParentPathNotFound"


def test_missing_filesystem_is_filesystem_not_found(dfs, credential):
    service = DataLakeServiceClient(dfs.url, credential=credential, connection_verify=dfs.ca_path)
    with pytest.raises(ResourceNotFoundError) as missing:
        service.get_file_system_client("other").get_file_client("a").upload_data(b"a", overwrite=True)
    assert missing.value.error_code == "FilesystemNotFound"
    assert service.get_file_system_client("workspace").exists()


def test_storage_retry_policy_does_not_retry_429(dfs, workspace):
    # The storage SDK retries 408 and 5xx only, and never reads Retry-After (azure-core's own
    # RetryPolicy cannot stand in: the storage pipeline passes it a `hosts` option it leaks to
    # the transport), so throttling reaches the caller with the service's hint intact.
    dfs.inject(status=429, headers={"Retry-After": "1"}, operation="get_properties")
    client = workspace.get_file_client("t/a")
    client.upload_data(b"a", overwrite=True)
    with pytest.raises(HttpResponseError) as throttled:
        client.get_file_properties()
    assert throttled.value.status_code == 429
    assert throttled.value.error_code == "ServerBusy"
    assert throttled.value.response.headers["Retry-After"] == "1"
    assert len(dfs.recorded("get_properties")) == 1

    assert client.get_file_properties().size == 1
    assert [r.status for r in dfs.recorded("get_properties")] == [429, 200]


def test_storage_retry_policy_retries_503_during_upload(dfs, workspace):
    dfs.inject(status=503, times=2, operation="flush")
    client = workspace.get_file_client("t/a")
    client.upload_data(b"abc", overwrite=True)
    assert [r.status for r in dfs.recorded("flush")] == [503, 503, 200]
    assert on_disk(dfs, "t/a") == b"abc"


def test_a_wrong_token_is_401_client_authentication_error(tmp_path):
    with DfsEmulator(tmp_path, required_token="the-right-one") as dfs:
        workspace = file_system_client(dfs, FixedTokenCredential("wrong"))
        with pytest.raises(ClientAuthenticationError) as refused:
            workspace.get_file_client("t/a").upload_data(b"a", overwrite=True)
        assert refused.value.status_code == 401
        assert refused.value.error_code == "InvalidAuthenticationInfo"
        assert not (dfs.root / "workspace/t").exists()

        file_system_client(dfs, FixedTokenCredential("the-right-one")).get_file_client("t/a").upload_data(
            b"a", overwrite=True
        )
        assert on_disk(dfs, "t/a") == b"a"


def test_a_raw_request_without_an_api_version_is_refused_like_azure_storage(dfs, workspace):
    workspace.get_file_client("t/_a").upload_data(b"a", overwrite=True)
    destination = workspace.get_file_client("t/a")
    request = HttpRequest("PUT", destination.url, headers={"x-ms-rename-source": "/workspace/t/_a"})
    response = destination._client._send_request(request)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "AuthenticationFailed"
    assert not destination.exists()


def test_missing_write_permission_is_403(dfs, workspace):
    dfs.inject(status=403, method="PUT", path="/workspace/t/*")
    with pytest.raises(HttpResponseError) as refused:
        workspace.get_file_client("t/a").upload_data(b"a", overwrite=True)
    assert refused.value.status_code == 403
    assert refused.value.error_code == "AuthorizationPermissionMismatch"
    assert not (dfs.root / "workspace/t").exists()


def test_a_dropped_connection_is_retried(dfs, workspace):
    client = workspace.get_file_client("t/a")
    client.upload_data(b"a", overwrite=True)
    dfs.inject(drop=True, operation="get_properties")
    assert client.get_file_properties().size == 1
    assert [r.status for r in dfs.recorded("get_properties")] == [None, 200]


def test_a_stalled_answer_times_out(dfs, credential):
    workspace = file_system_client(dfs, credential, retry_policy=ExponentialRetry(retry_total=0))
    dfs.inject(status=200, delay=1.0, operation="create_file")
    with pytest.raises(ServiceResponseError):
        workspace.get_file_client("t/a").create_file(read_timeout=0.2)


def test_an_answer_lost_after_the_rename_leaves_the_rename_done(dfs, credential):
    workspace = file_system_client(dfs, credential, retry_policy=ExponentialRetry(retry_total=0))
    workspace.get_file_client("t/_a").upload_data(b"a", overwrite=True)
    dfs.inject(status=500, operation="rename", after_operation=True)

    final = workspace.get_file_client("t/a")
    assert raw_rename(final, "t/_a").status_code == 500
    assert on_disk(dfs, "t/a") == b"a"
    # A blind retry of the create-only rename now meets its own earlier success.
    assert raw_rename(final, "t/_a").status_code == 404


def test_a_deferred_delete_keeps_the_folder_visible_for_a_while(dfs, workspace):
    folder = workspace.get_directory_client(f"{LANDING_ZONE}/T")
    folder.get_file_client("_metadata.json").upload_data(b"{}", overwrite=True)
    dfs.defer_delete(f"/workspace/{LANDING_ZONE}/T", requests=2)

    folder.delete_directory()
    assert folder.exists()
    assert [folder.exists() for _ in range(2)] == [True, False]
    assert not (dfs.root / "workspace" / LANDING_ZONE / "T").exists()

"""A local stand-in of the ADLS Gen2 (DFS) REST API that behaves like OneLake for what we use.

No DFS emulator runs offline (Azurite has no DFS endpoint), so the tests serve this one on
loopback, over HTTPS with a self-signed certificate made at start (azure-core refuses bearer
tokens over plain http), and drive it with the real `azure-storage-file-datalake` SDK.

Usage::

    from tests.support.dfs_emulator import DfsEmulator, FixedTokenCredential

    with DfsEmulator(tmp_path, filesystems=["workspace"]) as dfs:
        credential = FixedTokenCredential()
        service = DataLakeServiceClient(dfs.url, credential=credential,
                                        connection_verify=dfs.ca_path)
        fs = service.get_file_system_client("workspace")
        fs.get_file_client("item/Files/LandingZone/T/_x").upload_data(b"...", overwrite=True)
        assert (dfs.root / "workspace/item/Files/LandingZone/T/_x").read_bytes() == b"..."
        assert credential.scopes == ["https://storage.azure.com/.default"]

The `dfs_emulator` fixture (tests/conftest.py) yields one with the filesystem `workspace` under
the test's tmp_path.

- `dfs.url` is `https://127.0.0.1:PORT`; paths are `/<filesystem>/<path>` as on OneLake, whose
  filesystem is the workspace and landing zone `<workspace>/<item>/Files/LandingZone`.
  `dfs.root / <filesystem> / <path>` holds the committed bytes, so tests can read and seed them.
- Trusting the certificate: pass `connection_verify=dfs.ca_path` to any SDK client (azure-core
  hands it to requests as `verify=`), or set `REQUESTS_CA_BUNDLE=dfs.ca_path` in the environment
  (requests reads it because azure-core's transport keeps `trust_env`). Both are tested.
- Raw DFS requests through the SDK's authenticated pipeline (the create-only rename that the SDK
  does not offer): build an `azure.core.rest.HttpRequest` and send it with the generated client's
  `_send_request`, the codegen's documented entry point
  (https://aka.ms/azsdk/dpcodegen/python/send_request)::

      request = HttpRequest("PUT", dest_client.url + "?mode=legacy", headers={
          "x-ms-rename-source": "/workspace/" + quote(source_path),
          "If-None-Match": "*", "x-ms-version": "2021-06-08"})
      response = dest_client._client._send_request(request)   # azure.core.rest.HttpResponse
      if response.status_code >= 300: ...  # no error mapping: check it yourself

  It runs the client's whole pipeline: bearer token, x-ms-date, request id, retries, logging,
  but adds no `x-ms-version`: without one (or older than 2017-11-09) a bearer request gets
  403 AuthenticationFailed, here as from Azure Storage, so raw requests must set it.
- SDK behaviour this emulator shows (tests/processes/test_dfs_emulator.py): the storage retry policy
  retries 408, 5xx and dropped connections but NOT 429 and never reads Retry-After, and
  azure-core's `RetryPolicy` cannot replace it (the storage pipeline leaks a `hosts` option to
  the transport: TypeError); tests pass `retry_policy=ExponentialRetry(initial_backoff=0,
  increment_base=0, random_jitter_range=0)` to retry without waiting. `upload_data` without
  `overwrite=True` appends to an existing file (404 PathNotFound when missing, 412 when present);
  a create-only create is `create_file(match_condition=MatchConditions.IfMissing)` (no `etag=`).
- Faults: `dfs.inject(status=503, times=2, operation="flush")` answers the next two matching
  requests with a canned error in the real format (`code` defaults by status: 429/503 ServerBusy,
  500 InternalError, 401 InvalidAuthenticationInfo, 403 AuthorizationPermissionMismatch);
  `drop=True` closes the connection unanswered, `delay=s` stalls first, `after_operation=True`
  performs the operation and then loses the answer (the "it happened, but did it?" case).
  `dfs.defer_delete(path, requests=N)` makes the next delete of `path` succeed while the path
  stays visible for N more requests, as an eventually-consistent delete would.
- Records: `dfs.requests` (method, path, query, headers with the Authorization value redacted,
  operation, status) and `dfs.tokens` (bearer tokens seen). `required_token=` answers 401
  InvalidAuthenticationInfo to requests without that bearer token; a request without any
  Authorization header always gets 401, as OneLake does.

Implemented (DFS, plus the few Blob-endpoint calls the DataLake SDK makes for reads and
properties, since on 127.0.0.1 it sends both to the same host): filesystem create / properties /
delete; path create (file, directory, parents implicit) with If-Match / If-None-Match; append
(parallel chunks at any position; positions are checked at flush) and flush (committed only if the
appended data is contiguous up to `position`, else 400 InvalidFlushPosition; readers see the old
content until then); rename via `x-ms-rename-source` with destination and source conditions;
list paths (recursive or not, `maxResults` with `x-ms-continuation`); read with Range /
x-ms-range (206, 416 InvalidRange); HEAD properties with ETag, Content-Length,
x-ms-resource-type; delete (recursive, or 409 DirectoryNotEmpty).

Not implemented: leases, ACLs and owners (fixed `$superuser`), metadata and content settings
(accepted, not stored), SAS, Blob-endpoint uploads and listings, account-level listing,
soft delete, encryption headers, checksums (ignored).

Differences from OneLake, where known: OneLake workspaces are not created through the storage API
(here `PUT ?resource=filesystem` creates one; tests pass `filesystems=` instead), and OneLake
accepts paths only inside an item's `Files/` or `Tables/` (here any path is accepted);
rename `mode=legacy` and `posix` behave the same; a rename onto an existing directory is refused
(409 PathAlreadyExists); a rename whose destination parent is missing fails 404
RenameDestinationParentPathNotFound as ADLS does; ETags look like the service's (`"0x<hex>"`,
unquoted in listings) and change on every write; one lock serialises all operations.

Modules: `store` (the filesystems and their rules), `wire` (the REST format), `server` (HTTPS,
authentication, records, faults, dispatch), `faults`, `tls`, `credential`.
"""

from .credential import STORAGE_SCOPE, FixedTokenCredential
from .faults import Fault, RecordedRequest
from .server import DfsEmulator
from .store import DfsError

__all__ = [
    "STORAGE_SCOPE",
    "DfsEmulator",
    "DfsError",
    "Fault",
    "FixedTokenCredential",
    "RecordedRequest",
]

"""What the emulator records of each request, and the faults tests inject."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class RecordedRequest:
    """One request as the emulator saw it; `operation` is a name from `wire.operation_of`
    (create_file, create_directory, append, flush, rename, read, get_properties, list_paths,
    delete, set_properties, create_filesystem, get_filesystem_properties, delete_filesystem)."""

    method: str
    path: str  # decoded, "/<filesystem>/<path>"
    query: dict[str, str]
    headers: dict[str, str]  # Authorization value redacted
    operation: str
    status: int | None = None  # None while running or when the connection was dropped

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@dataclass
class Fault:
    """An injected misbehaviour for the next `times` requests that match every filter given
    (`method`, `path` pattern, `operation`, `match` predicate). It answers `status` with `code`
    (default by status) and `headers`; or, with `drop`, closes the connection unanswered; `delay`
    seconds pass first (a `status` below 400 only delays the real answer). With
    `after_operation` the request is carried out before the fault replaces its answer; with
    `truncate` it is carried out and its answer's body stops halfway, the connection closed."""

    status: int = 503
    code: str | None = None
    message: str = "Injected fault."
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1
    method: str | None = None
    path: str | None = None  # fnmatch pattern on the decoded "/<filesystem>/<path>"
    operation: str | None = None
    match: Callable[[RecordedRequest], bool] | None = None
    drop: bool = False
    delay: float = 0.0
    after_operation: bool = False
    truncate: bool = False

    def matches(self, request: RecordedRequest) -> bool:
        return (
            self.times > 0
            and (self.method is None or self.method.upper() == request.method)
            and (self.path is None or fnmatch.fnmatchcase(request.path, self.path))
            and (self.operation is None or self.operation == request.operation)
            and (self.match is None or self.match(request))
        )

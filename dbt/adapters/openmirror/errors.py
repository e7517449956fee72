"""Errors a dbt user can act on. Each names the model and, where there is one, the column and value."""

from typing import Any

from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError

from dbt.adapters.openmirror.text import printable


class OpenMirrorError(DbtRuntimeError):
    """Base class: something about the model or the landing zone stops the publish."""

    def __init__(self, msg: str, node: Any = None) -> None:
        # Messages quote folder names, file names and key values: anyone's text.
        super().__init__(printable(msg), node)


class LandingZoneConfigError(OpenMirrorError):
    """The profile's landing zone is missing or unusable."""


class MirrorConfigError(OpenMirrorError):
    """A model config value is missing or invalid."""


class KeyColumnsError(OpenMirrorError):
    """The model's unique key cannot be used: absent, NULL, duplicated or changed."""


class SchemaChangeError(OpenMirrorError):
    """The model's columns changed in a way the mirror cannot take in place."""


class PublishError(OpenMirrorError):
    """The landing zone is not in the state the publisher expects."""


class TargetExistsError(PublishError):
    """A create-only write found its target already present: a number is never overwritten."""


class StagedFilesChangedError(PublishError):
    """A run's staged files cannot be published as they are: they no longer hold the rows Spark
    counted when it wrote them, or Spark wrote them otherwise than the adapter asked."""


class WriteConflictError(PublishError):
    """A conditional write found the file changed since it was read (or present, or gone): it
    wrote nothing."""


class UnsafePathError(PublishError):
    """A delete would reach the landing zone root, `_scratchPad` itself or a path outside: the
    paths deleted come from data (manifest rows, journals), so every backend refuses them."""


class LeaseHeldError(PublishError):
    """Another run publishes the same table folder now (or took over this run's lease)."""


class LandingZoneAccessError(OpenMirrorError):
    """The landing zone refused our identity (401/403) or no token could be had: not retried."""


class LandingZoneServiceError(OpenMirrorError):
    """The landing zone's service refused a request, or kept failing it (throttling, timeouts,
    server errors) after every retry."""

    def __init__(self, msg: str, status_code: int | None = None) -> None:
        super().__init__(msg)
        #: The HTTP status of the refusal; None when retries ran out without one.
        self.status_code = status_code


class ServiceWaitError(PublishError):
    """The mirroring service did not reach the state a rebuild waits for in time."""


class RunInterruptedError(OpenMirrorError):
    """dbt cancelled the invocation (Ctrl-C): a model still running stops before publishing."""


class SparkStatementError(DbtDatabaseError):
    """A statement failed in Spark; the message is its short cause (the full text is logged at
    debug level)."""

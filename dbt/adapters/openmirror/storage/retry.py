"""Retries for the landing zone's HTTP requests: throttling (429), server errors (500/502/503/504),
request timeouts (408) and dropped connections, with exponential backoff, jitter and the service's
`Retry-After`. 401/403 and other client errors are not retried (they fail fast, see onelake.py).

The storage SDK's own retry policy does not retry 429 and ignores `Retry-After`, so the clients are
built with this one instead (azure-core's RetryPolicy, which does both, plus jitter). Every upload
is DFS append and flush (PATCH), which azure-core retries only on 500/503/504: here on every
transient fault, since both name the position they write at, so one sent again writes the same
bytes at the same place. A `Retry-After` is honoured up to the longest backoff; one that is not a
number of seconds or an HTTP date is ignored (the backoff applies).
"""

import random
from dataclasses import dataclass
from typing import Any

from azure.core.pipeline.policies import RetryPolicy


@dataclass(frozen=True)
class RetrySettings:
    attempts: int = 8
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 60.0
    connection_timeout_seconds: float = 20.0
    read_timeout_seconds: float = 120.0


class TransientFaultRetry(RetryPolicy):
    def __init__(self, settings: RetrySettings) -> None:
        super().__init__(
            retry_total=settings.attempts - 1,
            retry_connect=settings.attempts - 1,
            retry_read=settings.attempts - 1,
            retry_status=settings.attempts - 1,
            retry_backoff_factor=settings.backoff_seconds,
            retry_backoff_max=settings.max_backoff_seconds,
        )
        self._method_whitelist = self._method_whitelist | {"PATCH"}

    def configure_retries(self, options: dict[str, Any]) -> dict[str, Any]:
        # The storage SDK's host policy leaves these for its own retry policy to consume; passed on
        # to the transport they would become unknown keyword arguments of the HTTP call.
        for key in ("hosts", "location_mode", "retry_to_secondary"):
            options.pop(key, None)
        return super().configure_retries(options)

    def send(self, request: Any) -> Any:
        response = super().send(request)
        # The storage SDK's deserializers read this, which its own retry policy sets; there are
        # no secondary hosts for DFS endpoints.
        response.http_response.location_mode = "primary"
        return response

    def get_backoff_time(self, settings: dict[str, Any]) -> float:
        """backoff * 2^(n-1), capped, with 'full jitter' so many clients do not retry in step.
        (A `Retry-After` from the service takes precedence; azure-core sleeps that instead.)"""
        attempt = max(1, len(settings["history"]))
        ceiling = min(settings["max_backoff"], settings["backoff"] * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)

    def get_retry_after(self, response: Any) -> float | None:
        """The service's `Retry-After`, at most the longest backoff: a day's wait would hold the
        table's lease (renewed meanwhile) as long."""
        try:
            seconds = super().get_retry_after(response)
        except (ValueError, OverflowError):  # neither seconds nor an HTTP date
            return None
        return None if seconds is None else min(max(seconds, 0.0), self.backoff_max)

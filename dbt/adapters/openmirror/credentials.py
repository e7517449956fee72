from dataclasses import dataclass
from typing import Optional, Tuple

from dbt.adapters.spark.connections import SparkCredentials

from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.storage import local_root


@dataclass
class OpenMirrorCredentials(SparkCredentials):
    """dbt-spark's profile fields plus where the landing zone is."""

    landing_zone: Optional[str] = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.landing_zone:
            raise LandingZoneConfigError(
                "Must specify `landing_zone` in the profile: the folder (or file:// URL) of the "
                "open mirroring landing zone to publish into"
            )
        # Fail at load time, with the reason, rather than halfway through a run.
        self.landing_zone = str(local_root(self.landing_zone))

    @property
    def type(self) -> str:
        return "openmirror"

    def _connection_keys(self) -> Tuple[str, ...]:
        return (*super()._connection_keys(), "method", "landing_zone")

from dataclasses import dataclass, field

from dbt.adapters.spark.connections import SparkCredentials

from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.publishing.staging import STAGING_MODES
from dbt.adapters.openmirror.spark.parquet_writes import conflicting_settings
from dbt.adapters.openmirror.storage import canonical_landing_zone
from dbt.adapters.openmirror.storage.azure_auth import AUTH_METHODS, DEFAULT, AzureAuth
from dbt.adapters.openmirror.storage.location import is_remote


@dataclass
class OpenMirrorCredentials(SparkCredentials):
    """dbt-spark's profile fields plus where the landing zone is and how to sign in to it.

    `auth` is also dbt-spark's field (Thrift: NONE, LDAP, KERBEROS, ...). The OneLake sign-in
    methods are taken from it into `landing_zone_auth` and never reach dbt-spark; any other value
    stays dbt-spark's. When `auth` is needed for the Thrift server, set `landing_zone_auth`.
    """

    landing_zone: str | None = None
    landing_zone_auth: str | None = None
    tenant_id: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    spark_staging: str = "auto"
    # A missing landing zone root is an error (a mistyped path), unless this asks to create it.
    create_landing_zone: bool = False

    def __post_init__(self) -> None:
        if self.auth is not None and self.auth.lower() in AUTH_METHODS:
            self.landing_zone_auth, self.auth = self.auth.lower(), None
        super().__post_init__()
        if not self.landing_zone:
            raise LandingZoneConfigError(
                "Must specify `landing_zone` in the profile: the folder (or file:// URL) or the "
                "OneLake URL of the open mirroring landing zone to publish into"
            )
        # Fail at load time, with the reason, rather than halfway through a run.
        self.landing_zone = canonical_landing_zone(self.landing_zone)
        conflicting = conflicting_settings(self.server_side_parameters or {})
        if conflicting:
            raise LandingZoneConfigError(
                f"server_side_parameters sets {'; '.join(conflicting)}: dbt-openmirror sets it itself before it "
                "writes files, and dbt-spark would apply the profile's value over it. Remove it from the profile"
            )
        if self.spark_staging not in STAGING_MODES:
            raise LandingZoneConfigError(
                f"spark_staging {self.spark_staging!r} must be one of {', '.join(STAGING_MODES)}"
            )
        if is_remote(self.landing_zone):
            self.landing_zone_auth = self.landing_zone_auth or DEFAULT
            self.azure_auth()  # validates the method and its fields

    def azure_auth(self) -> AzureAuth:
        return AzureAuth(self.landing_zone_auth or DEFAULT, self.tenant_id, self.client_id, self.client_secret)

    @property
    def type(self) -> str:
        return "openmirror"

    def _connection_keys(self) -> tuple[str, ...]:
        # Never client_secret: dbt debug prints these.
        keys = (*super()._connection_keys(), "method", "landing_zone", "create_landing_zone", "spark_staging")
        if is_remote(self.landing_zone or ""):
            keys += ("landing_zone_auth", "tenant_id", "client_id")
        return keys

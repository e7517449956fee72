"""Which azure-identity credential signs the landing zone's requests, from the profile's `auth`.

The storage SDK asks every credential for the Storage audience (`https://storage.azure.com/.default`),
the one OneLake accepts (spec section 6).
"""

from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.openmirror.errors import LandingZoneConfigError

DEFAULT, SERVICE_PRINCIPAL, MANAGED_IDENTITY, CLI = "default", "service_principal", "managed_identity", "cli"
AUTH_METHODS = (DEFAULT, SERVICE_PRINCIPAL, MANAGED_IDENTITY, CLI)
STORAGE_SCOPE = "https://storage.azure.com/.default"
MASK = "****"


@dataclass(frozen=True)
class AzureAuth:
    method: str = DEFAULT
    tenant_id: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.method not in AUTH_METHODS:
            raise LandingZoneConfigError(
                f"auth {self.method!r} is not a OneLake sign-in method; use one of {', '.join(AUTH_METHODS)}"
            )
        if self.method == SERVICE_PRINCIPAL:
            missing = [n for n in ("tenant_id", "client_id", "client_secret") if not getattr(self, n)]
            if missing:
                raise LandingZoneConfigError(f"auth: service_principal needs {', '.join(missing)} in the profile")

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.client_secret,) if s)

    def mask(self, text: str) -> str:
        """`text` with every secret replaced: for messages that quote other libraries."""
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text


def token_credential(auth: AzureAuth) -> Any:
    """The azure-identity credential for `auth` (imported here: local landing zones need none)."""
    import azure.identity as identity

    if auth.method == SERVICE_PRINCIPAL:
        # AzureAuth refuses a service principal without all three (its __post_init__).
        assert auth.tenant_id and auth.client_id and auth.client_secret
        return identity.ClientSecretCredential(auth.tenant_id, auth.client_id, auth.client_secret)
    if auth.method == MANAGED_IDENTITY:
        return identity.ManagedIdentityCredential(client_id=auth.client_id or None)
    if auth.method == CLI:
        return identity.AzureCliCredential(tenant_id=auth.tenant_id or "")
    # The chain reads AZURE_TENANT_ID and friends itself; client_id picks a user-assigned identity.
    return identity.DefaultAzureCredential(**({"managed_identity_client_id": auth.client_id} if auth.client_id else {}))

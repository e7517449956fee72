"""Profile `auth` → the azure-identity credential, the reconciliation with dbt-spark's `auth`,
and the client secret kept out of everything printed."""

import pytest
from azure.identity import (
    AzureCliCredential,
    ClientSecretCredential,
    DefaultAzureCredential,
    ManagedIdentityCredential,
)

from dbt.adapters.openmirror.credentials import OpenMirrorCredentials
from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.storage.azure_auth import AzureAuth, token_credential

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
CLIENT = "3c1d9f4b-0a7e-4d2a-8c6e-5b1f2a3d4e5f"
SECRET = "Zq8~s3cr3t.v4lue-never-printed"
ONELAKE = "https://onelake.dfs.fabric.microsoft.com/ws/db.MirroredDatabase/Files/LandingZone"


def _credentials(**fields):
    return OpenMirrorCredentials.from_dict(
        {"method": "session", "host": "localhost", "schema": "s", "landing_zone": ONELAKE, **fields}
    )


def test_service_principal_builds_a_client_secret_credential():
    credential = token_credential(AzureAuth("service_principal", TENANT, CLIENT, SECRET))
    assert isinstance(credential, ClientSecretCredential)
    assert (credential._tenant_id, credential._client_id) == (TENANT, CLIENT)


def test_managed_identity_with_and_without_a_client_id():
    assert isinstance(token_credential(AzureAuth("managed_identity")), ManagedIdentityCredential)
    user_assigned = token_credential(AzureAuth("managed_identity", client_id=CLIENT))
    assert isinstance(user_assigned, ManagedIdentityCredential)
    assert CLIENT in repr(vars(user_assigned._credential))


def test_cli_and_the_default_chain():
    cli = token_credential(AzureAuth("cli", tenant_id=TENANT))
    assert isinstance(cli, AzureCliCredential) and cli.tenant_id == TENANT
    chain = token_credential(AzureAuth())
    assert isinstance(chain, DefaultAzureCredential)
    assert "AzureCliCredential" in [type(c).__name__ for c in chain.credentials]


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"auth": "service_principal", "tenant_id": TENANT}, "needs client_id, client_secret"),
        ({"landing_zone_auth": "password"}, "not a OneLake sign-in method"),
        ({"spark_staging": "sometimes"}, "spark_staging 'sometimes' must be one of auto, direct, upload"),
        (
            {"server_side_parameters": {"spark.sql.parquet.outputTimestampType": "INT96"}},
            r"sets spark.sql.parquet.outputTimestampType=INT96 \(the mirror's files need TIMESTAMP_MICROS\)",
        ),
        (
            {"server_side_parameters": {"spark.sql.parquet.datetimeRebaseModeInWrite": "LEGACY"}},
            "datetimeRebaseModeInWrite=LEGACY .*Remove it from the profile",
        ),
    ],
)
def test_profile_mistakes_are_named(fields, message):
    with pytest.raises(LandingZoneConfigError, match=message):
        _credentials(**fields)


def test_onelake_auth_values_are_ours_and_others_stay_dbt_sparks():
    ours = _credentials(auth="service_principal", tenant_id=TENANT, client_id=CLIENT, client_secret=SECRET)
    assert (ours.auth, ours.landing_zone_auth) == (None, "service_principal")
    assert ours.azure_auth() == AzureAuth("service_principal", TENANT, CLIENT, SECRET)
    thrift = _credentials(auth="KERBEROS", landing_zone_auth="managed_identity")
    assert (thrift.auth, thrift.landing_zone_auth) == ("KERBEROS", "managed_identity")
    assert _credentials().landing_zone_auth == "default"
    # dbt re-creates credentials from their dict: the reconciliation holds on the way back.
    again = OpenMirrorCredentials.from_dict(ours.to_dict())
    assert (again.auth, again.landing_zone_auth) == (None, "service_principal")


def test_the_secret_is_never_shown():
    credentials = _credentials(auth="service_principal", tenant_id=TENANT, client_id=CLIENT, client_secret=SECRET)
    shown = repr(credentials) + repr(credentials.azure_auth()) + repr(list(credentials.connection_info()))
    assert SECRET not in shown
    assert ("client_id", CLIENT) in list(credentials.connection_info())
    assert "client_secret" not in credentials._connection_keys()
    assert credentials.azure_auth().mask(f"AADSTS7000215: invalid secret {SECRET}") == (
        "AADSTS7000215: invalid secret ****"
    )


def test_local_landing_zones_show_no_onelake_fields(tmp_path):
    local = _credentials(landing_zone=str(tmp_path))
    assert "landing_zone_auth" not in local._connection_keys()
    assert local.landing_zone == str(tmp_path)


def test_profile_settings_the_adapter_needs_may_be_spelled_as_it_sets_them():
    parameters = {"spark.sql.parquet.outputTimestampType": "timestamp_micros"}
    kept = _credentials(server_side_parameters=parameters).server_side_parameters
    assert kept["spark.sql.parquet.outputTimestampType"] == "timestamp_micros"

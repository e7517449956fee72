"""Profile fields: `landing_zone` is required, must be usable, and `dbt debug` checks it."""

import pytest
import yaml
from dbt.tests.util import run_dbt_and_capture


class TestDebugChecksTheLandingZone:
    def test_debug_writes_and_removes_a_probe(self, project, landing_zone):
        before = sorted(p.relative_to(landing_zone) for p in landing_zone.rglob("*") if p.is_file())
        _, output = run_dbt_and_capture(["debug"])
        assert "All checks passed" in output
        after = sorted(p.relative_to(landing_zone) for p in landing_zone.rglob("*") if p.is_file())
        assert after == before


def _debug_with_profile(tmp_path, target_fields):
    """`dbt debug` on a minimal project whose profile has `target_fields`."""
    (tmp_path / "dbt_project.yml").write_text("name: p\nversion: '1.0'\nconfig-version: 2\nprofile: p\n")
    target = {"type": "openmirror", "method": "session", "host": "localhost", "schema": "s", **target_fields}
    (tmp_path / "profiles.yml").write_text(yaml.safe_dump({"p": {"target": "t", "outputs": {"t": target}}}))
    _, output = run_dbt_and_capture(
        ["debug", "--project-dir", str(tmp_path), "--profiles-dir", str(tmp_path)], expect_pass=False
    )
    return output


@pytest.mark.parametrize(
    "fields, message",
    [
        ({}, "Must specify `landing_zone`"),
        ({"landing_zone": "http://onelake.dfs.fabric.microsoft.com/ws/db/Files/LandingZone"},
         "use https:// or abfss://"),
        ({"landing_zone": "https://onelake.dfs.fabric.microsoft.com/ws/db/Files/LandingZone",
          "auth": "service_principal", "client_id": "c"}, "needs tenant_id, client_secret"),
        ({"landing_zone": "s3://bucket/lz"}, "unknown scheme 's3://'"),
    ],
)
def test_debug_rejects_an_unusable_landing_zone(tmp_path, fields, message):
    assert message in _debug_with_profile(tmp_path, fields)


def test_debug_rejects_a_landing_zone_that_is_a_file(tmp_path):
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("x")
    output = _debug_with_profile(tmp_path, {"landing_zone": f"file://{not_a_folder}"})
    assert "is a file, not a folder" in output

"""Profile fields: `landing_zone` is required, must be usable, and `dbt debug` checks it."""

import pytest
import yaml
from dbt.adapters.factory import reset_adapters
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support.unwritable import unwritable


class TestDebugChecksTheLandingZone:
    def test_debug_writes_and_removes_a_probe(self, project, landing_zone):
        before = sorted(p.relative_to(landing_zone) for p in landing_zone.rglob("*") if p.is_file())
        _, output = run_dbt_and_capture(["debug"])
        assert "All checks passed" in output
        after = sorted(p.relative_to(landing_zone) for p in landing_zone.rglob("*") if p.is_file())
        assert after == before


def _debug_with_profile(tmp_path, target_fields, expect_pass=False):
    """`dbt debug` on a minimal project whose profile has `target_fields`."""
    (tmp_path / "dbt_project.yml").write_text("name: p\nversion: '1.0'\nconfig-version: 2\nprofile: p\n")
    target = {"type": "openmirror", "method": "session", "host": "localhost", "schema": "s", **target_fields}
    (tmp_path / "profiles.yml").write_text(yaml.safe_dump({"p": {"target": "t", "outputs": {"t": target}}}))
    try:
        _, output = run_dbt_and_capture(
            ["debug", "--project-dir", str(tmp_path), "--profiles-dir", str(tmp_path)], expect_pass=expect_pass
        )
    finally:
        # dbt debug leaves its adapter (made from a profile, without a project) registered: the
        # next test's fixtures would reuse it.
        reset_adapters()
    return output


@pytest.mark.parametrize(
    "fields, message",
    [
        ({}, "Must specify `landing_zone`"),
        (
            {"landing_zone": "http://onelake.dfs.fabric.microsoft.com/ws/db/Files/LandingZone"},
            "use https:// or abfss://",
        ),
        (
            {
                "landing_zone": "https://onelake.dfs.fabric.microsoft.com/ws/db/Files/LandingZone",
                "auth": "service_principal",
                "client_id": "c",
            },
            "needs tenant_id, client_secret",
        ),
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


def _missing_landing_zone_named(output, path):
    assert f"landing zone {path} does not exist" in output
    assert "fix `landing_zone` in the profile" in output
    assert "set `create_landing_zone: true`" in output


def test_debug_rejects_a_landing_zone_that_does_not_exist(tmp_path, spark_settings):
    mistyped = tmp_path / "landing_zne"
    output = _debug_with_profile(tmp_path, {"landing_zone": str(mistyped), "server_side_parameters": spark_settings})
    _missing_landing_zone_named(output, mistyped)
    assert not mistyped.exists()


def test_debug_creates_the_landing_zone_when_the_profile_asks(tmp_path, spark_settings):
    landing_zone = tmp_path / "new" / "landing_zone"
    output = _debug_with_profile(
        tmp_path,
        {"landing_zone": str(landing_zone), "create_landing_zone": True, "server_side_parameters": spark_settings},
        expect_pass=True,
    )
    assert "All checks passed" in output
    assert output.count(f"Created the landing zone {landing_zone} (create_landing_zone: true)") == 1
    assert landing_zone.is_dir() and list(landing_zone.iterdir()) == []


@pytest.fixture
def unwritable_root(tmp_path):
    """A landing zone whose root cannot be written while its `_scratchPad` can."""
    root = tmp_path / "landing_zone"
    (root / "_scratchPad").mkdir(parents=True)
    with unwritable(root):
        yield root


def test_debug_checks_that_the_root_itself_is_writable(tmp_path, spark_settings, unwritable_root):
    output = _debug_with_profile(
        tmp_path, {"landing_zone": str(unwritable_root), "server_side_parameters": spark_settings}
    )
    assert f"landing zone {unwritable_root} is not writable" in output
    assert sorted(p.name for p in unwritable_root.iterdir()) == ["_scratchPad"]


MODEL = "{{ config(materialized='open_mirror', unique_key='id') }}\nselect 1 as id"


class TestAFirstRunIntoAMissingLandingZone:
    @pytest.fixture(scope="class")
    def landing_zone(self, tmp_path_factory):
        return tmp_path_factory.mktemp("typo") / "landing_zne"

    @pytest.fixture(scope="class")
    def models(self):
        return {"first.sql": MODEL, "second.sql": MODEL}

    def test_fails_naming_it_and_creates_nothing(self, project, landing_zone):
        results = run_dbt(["run"], expect_pass=False)
        for result in results:
            _missing_landing_zone_named(result.message, landing_zone)
        assert not landing_zone.exists()

"""`dbt-openmirror publish` stopped at every landing-zone operation, and killed for real: the
next publish finishes the work, and the landing zone replays to exactly the model output with
continuous numbering, every staged run published once and nothing left staged."""

import signal
import subprocess
import sys

import pytest

from dbt.adapters.openmirror.package.publish import read_manifest
from dbt.adapters.openmirror.storage import LocalStorage
from tests.functional.test_package_mode import _stage
from tests.support.faults import FaultInjectingStorage, FaultInjector, InjectedFault
from tests.support.faulty import faulty_command, faulty_env
from tests.support.mirror import findings_for, model_output, normalized, table_folder
from tests.support.mirror_oracle import replay
from tests.support.package_mode import InPackageMode, copy_landing_zone, manifest_states, publish

# Killed for real at these operations (in a separate process); every operation in-process.
KILL_POINTS = (2, 7, 12)


class TestPublishCrashes(InPackageMode):
    @pytest.fixture(scope="class")
    def staged(self, project, warehouse, landing_zone, tmp_path_factory):
        """Three runs staged and none published, kept aside; and the final model output."""
        _stage(project, warehouse, "(1, 'a', 10), (2, 'b', 20), (3, 'c', 30)")
        _stage(project, warehouse, "(1, 'a', 11), (3, 'c', 30), (4, 'd', 40)")
        _stage(project, warehouse, "(1, 'a', 12), (4, 'd', 41), (5, 'e', 50)")
        pristine = tmp_path_factory.mktemp("staged") / "landing_zone"
        copy_landing_zone(landing_zone, pristine)
        return pristine, model_output(warehouse, f"select * from {project.test_schema}.customers")

    def _assert_published_once(self, project, landing_zone, expected):
        folder = table_folder(landing_zone, project.test_schema, "customers")
        assert normalized(replay(folder)) == expected
        assert manifest_states(landing_zone) == ["published"] * 3
        assert findings_for(landing_zone, folder) == []
        scratch = landing_zone / "_scratchPad" / "dbt-openmirror"
        assert sorted(p.name for p in scratch.iterdir() if p.name != "leases") == ["manifest"]
        # Manifest rows are uploaded under a hidden name, then renamed: no upload is left behind.
        uploads = [p.name for p in (scratch / "manifest").iterdir() if p.name.startswith("_") and ".parquet." in p.name]
        assert uploads == []

    def test_every_operation(self, project, landing_zone, staged, tmp_path):
        pristine, expected = staged
        log = tmp_path / "operations.log"
        copy_landing_zone(pristine, landing_zone)
        publish(landing_zone, FaultInjectingStorage(LocalStorage(landing_zone), FaultInjector(0, log_path=str(log))))
        operations = log.read_text().splitlines()
        self._assert_published_once(project, landing_zone, expected)
        assert len(operations) > max(KILL_POINTS)

        for point in range(1, len(operations) + 1):
            copy_landing_zone(pristine, landing_zone)
            with pytest.raises(InjectedFault):
                publish(landing_zone, FaultInjectingStorage(LocalStorage(landing_zone), FaultInjector(point)))
            waiting = [run.run_id for run in read_manifest(LocalStorage(landing_zone)) if run.state != "published"]
            # The publish that finishes the work reports every run it leaves published, also one it
            # finished for the stopped publish.
            assert [run.run_id for run in publish(landing_zone)] == waiting, point
            self._assert_published_once(project, landing_zone, expected)
        print(f"publish failed at each of {len(operations)} operations in turn, 0 divergences")

    # Extended tier, with the other processes killed for real (test_crash_kill.py).
    @pytest.mark.extended
    @pytest.mark.parametrize("point", KILL_POINTS)
    def test_killed_publish(self, project, landing_zone, staged, point):
        pristine, expected = staged
        copy_landing_zone(pristine, landing_zone)
        killed = subprocess.run(
            faulty_command(["dbt-openmirror", "publish", str(landing_zone)], point, "kill"),
            env=faulty_env(),
            capture_output=True,
            text=True,
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        command = [sys.executable, "-m", "dbt.adapters.openmirror.tools.cli", "publish", str(landing_zone)]
        finished = subprocess.run(command, capture_output=True, text=True)
        assert finished.returncode == 0, finished.stderr
        self._assert_published_once(project, landing_zone, expected)

"""`dbt` or `dbt-openmirror` in a process of its own that fails at one landing-zone operation
(tests/support/faults.py), for the tests that crash, kill or stall a real process:

    python -m tests.support.faulty --fail-at N [--mode raise|kill|stop] [--log FILE] dbt run ...
    python -m tests.support.faulty --fail-at N [--mode ...] [--log FILE] dbt-openmirror publish LZ

`--fail-at 0` fails nothing; with `--log` it lists the operations, the run's crash points.
`faulty_command` builds such a command line and `faulty_env` the environment it needs.
"""

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.support.faults import MODES, FaultInjector, injected

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ("dbt", "dbt-openmirror")


def faulty_command(command: Sequence[str], fail_at: int, mode: str = "raise", log: Path | None = None) -> list[str]:
    """`command` (`dbt ...` or `dbt-openmirror ...`) failing at operation `fail_at`."""
    return [
        sys.executable,
        "-m",
        "tests.support.faulty",
        "--fail-at",
        str(fail_at),
        "--mode",
        mode,
        *(["--log", str(log)] if log is not None else []),
        *command,
    ]


def faulty_env() -> dict[str, str]:
    """This environment, with the repository importable from any working folder."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.support.faulty", description=__doc__)
    parser.add_argument("--fail-at", type=int, required=True)
    parser.add_argument("--mode", choices=MODES, default="raise")
    parser.add_argument("--log")
    parser.add_argument("program", choices=PROGRAMS)
    parser.add_argument("arguments", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    injector = FaultInjector(args.fail_at, args.mode, args.log)
    with injected(injector, adapter=args.program == "dbt"):
        if args.program == "dbt":
            from dbt.cli.main import cli

            return cli.main(args.arguments, prog_name="dbt")  # exits with dbt's status, as `dbt` does
        from dbt.adapters.openmirror.tools.cli import main as openmirror

        return openmirror(args.arguments)


if __name__ == "__main__":
    sys.exit(main())

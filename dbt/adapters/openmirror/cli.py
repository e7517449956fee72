"""The `dbt-openmirror` command: check a landing zone, replay it locally, show its status."""

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from dbt.adapters.openmirror.landing_zone import parse_sequence_number, table_folders
from dbt.adapters.openmirror.lease import LeaseManager
from dbt.adapters.openmirror.local_mirror.replay import LocalMirror
from dbt.adapters.openmirror.publisher import Publisher
from dbt.adapters.openmirror.storage import open_landing_zone
from dbt.adapters.openmirror.validate import ERROR, validate


def _replay(args: argparse.Namespace) -> int:
    mirror = LocalMirror(open_landing_zone(args.landing_zone), Path(args.target).resolve())
    statuses = mirror.replay()
    for status in statuses:
        line = (
            f"{status.sourceSchemaName}.{status.sourceTableName}: {status.status}, "
            f"applied through file {status.lastAppliedFile}, "
            f"{status.metrics['processedRows']} rows processed"
        )
        if status.errorMessage:
            line += f" ({status.errorCode or 'note'}: {status.errorMessage})"
        print(line)
    return 1 if any(s.status == "Error" for s in statuses) else 0


def _status(args: argparse.Namespace) -> int:
    storage = open_landing_zone(args.landing_zone)
    publisher = Publisher(storage)
    leases = LeaseManager(storage)
    mirrored = {}
    if args.target:
        mirrored = LocalMirror(storage, Path(args.target).resolve()).read_status()
    print(f"{'table':40} {'last file':>9} {'waiting':>7}  mirror")
    for schema, table, folder in table_folders(storage):
        state = publisher.table_state(folder)
        waiting = sum(1 for n in storage.list_names(folder) if parse_sequence_number(n) is not None)
        status = mirrored.get((schema, table))
        mirror = "-"
        if status is not None:
            mirror = f"{status.status}, {status.metrics['processedRows']} rows processed"
            if status.errorMessage:
                mirror += f": {status.errorMessage}"
        print(f"{schema + '.' + table:40} {state.last_sequence_number:>9} {waiting:>7}  {mirror}")
        for note in _publisher_notes(leases, folder, state):
            print(f"    {note}")
    return 0


def _publisher_notes(leases: LeaseManager, folder: str, state) -> List[str]:
    """Who is publishing the table now, and a publish an interrupted run left unfinished."""
    notes = []
    lease = leases.current(folder)
    if lease is not None:
        notes.append(f"lease: {lease.holder.describe()}")
    if state.pending is not None:
        notes.append(
            f"unfinished publish of run {state.pending.run_id} ({len(state.pending.files)} files "
            f"after {state.pending.base_sequence_number}); the next dbt run of "
            f"'{state.pending.model}' finishes or discards it"
        )
    return notes


def _validate(args: argparse.Namespace) -> int:
    findings = validate(open_landing_zone(args.landing_zone))
    for finding in findings:
        print(finding)
    errors = sum(1 for f in findings if f.severity == ERROR)
    print(f"{errors} errors, {len(findings) - errors} warnings")
    return 1 if errors else 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="dbt-openmirror", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="apply a landing zone to local Delta tables")
    replay.add_argument("landing_zone", help="landing zone folder or file:// URL")
    replay.add_argument("--target", required=True, help="folder of the local mirrored database")
    replay.set_defaults(run=_replay)
    check = commands.add_parser("validate", help="check a landing zone against the spec (read-only)")
    check.add_argument("landing_zone")
    check.set_defaults(run=_validate)
    status = commands.add_parser("status", help="per table: last number, files waiting, mirror state")
    status.add_argument("landing_zone")
    status.add_argument("--target", help="the local mirror written by `replay`")
    status.set_defaults(run=_status)
    return top


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())

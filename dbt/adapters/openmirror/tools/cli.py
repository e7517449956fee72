"""The `dbt-openmirror` command: publish what package mode staged (now, polling, or on dbt Cloud's
webhook), check a landing zone, replay it locally, show its status."""

import argparse
import logging
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

from dbt.adapters.openmirror import storage as landing_zone_storage  # its factory is looked up when called
from dbt.adapters.openmirror.errors import LandingZoneConfigError, OpenMirrorError, PublishError
from dbt.adapters.openmirror.package.publish import PackagePublisher, staged_runs
from dbt.adapters.openmirror.publishing.lease import LeaseManager
from dbt.adapters.openmirror.publishing.mirroring_service import DEFAULT_REBUILD_WAIT_SECONDS
from dbt.adapters.openmirror.publishing.publisher import Publisher, TableFolderState
from dbt.adapters.openmirror.rules.landing_zone import METADATA_FILE, parse_sequence_number, table_folders
from dbt.adapters.openmirror.rules.metadata_files import LAST_UPDATE_TIME, TableMetadata, parse_table_metadata
from dbt.adapters.openmirror.rules.monitoring import (
    REPLICATOR_FILE,
    TABLES_FILE,
    describe_replicator,
    parse_tables,
)
from dbt.adapters.openmirror.storage import LandingZoneStorage
from dbt.adapters.openmirror.storage.azure_auth import AUTH_METHODS, DEFAULT, AzureAuth
from dbt.adapters.openmirror.text import counted, printable
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror
from dbt.adapters.openmirror.tools.local_mirror.status import STATUS_FILE, TableStatus
from dbt.adapters.openmirror.tools.validate import ERROR, validate
from dbt.adapters.openmirror.tools.webhook import DEFAULT_MAX_AGE_SECONDS, WebhookReceiver

WEBHOOK_SECRET_VARIABLE = "DBT_CLOUD_WEBHOOK_SECRET"


def _landing_zone(args: argparse.Namespace) -> LandingZoneStorage:
    """The landing zone named on the command line; OneLake sign-in from the options (the client
    secret only from AZURE_CLIENT_SECRET, never from the command line)."""
    auth = AzureAuth(args.auth, args.tenant_id, args.client_id, os.environ.get("AZURE_CLIENT_SECRET"))
    return landing_zone_storage.open_landing_zone(args.landing_zone, auth)


def _existing_landing_zone(args: argparse.Namespace) -> LandingZoneStorage:
    """The landing zone, refused when it does not exist: a mistyped path is not an empty landing zone."""
    storage = _landing_zone(args)
    if not storage.exists(""):
        raise LandingZoneConfigError(f"the landing zone {storage.location} does not exist")
    return storage


def _say(line: str, error: bool = False) -> None:
    """One line of output, flushed (a watching command's lines reach a log as they happen)."""
    print(printable(line), file=sys.stderr if error else sys.stdout, flush=True)


def _pause(seconds: float) -> None:
    """Between two polls of `publish --watch`."""
    time.sleep(seconds)


def _publish(args: argparse.Namespace) -> int:
    # Once, a mistyped path is an error; a watcher may start before Spark first writes the folder.
    storage = _landing_zone(args) if args.watch else _existing_landing_zone(args)
    publisher = PackagePublisher(
        storage,
        lease_wait_seconds=args.lease_wait_seconds,
        rebuild_wait_seconds=args.rebuild_wait_seconds,
        log=_say,
    )
    if not args.watch:
        published = publisher.publish()
        _say(f"published {counted(len(published), 'staged run')}")
        return 0
    if not storage.exists(""):
        _say(f"the landing zone {storage.location} does not exist yet; watching it")
    stop_handler = signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop as on Ctrl-C
    try:
        while True:
            try:
                publisher.publish()
            except Exception as exc:  # a failing table or a storage outage: retried at the next poll
                _say(f"dbt-openmirror publish: {getattr(exc, 'msg', exc)}", error=True)
            _pause(args.interval)
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, stop_handler)


def _replay(args: argparse.Namespace) -> int:
    mirror = LocalMirror(_existing_landing_zone(args), Path(args.target).resolve())
    if args.watch:
        return _replay_watch(mirror, args.interval)
    statuses = mirror.replay()  # one poll: the service's status files are a watching mirror's
    _say_rebuilt(mirror)
    for status in statuses:
        _say(status.describe())
    return 1 if any(s.status == "Error" for s in statuses) else 0


def _say_rebuilt(mirror: LocalMirror) -> None:
    """The tables the last poll rebuilt: their status line may read as before."""
    for schema, table in mirror.rebuilt:
        _say(f"{schema}.{table}: rebuilt (its folder was deleted and created again)")


def _replay_watch(mirror: LocalMirror, interval: float) -> int:
    """Poll until Ctrl-C or SIGTERM (the poll under way finishes first; a second signal stops at
    once), printing each table's line when it changes and the tables dropped."""
    stop = threading.Event()
    shown: dict[tuple[str, str], str] = {}

    def report(statuses: list[TableStatus]) -> None:
        current = {(s.sourceSchemaName, s.sourceTableName): s.describe() for s in statuses}
        for key in sorted(set(shown) - set(current)):
            _say(f"{key[0]}.{key[1]}: dropped (its folder was deleted)")
        _say_rebuilt(mirror)
        for key, line in sorted(current.items()):
            if shown.get(key) != line:
                _say(line)
        shown.clear()
        shown.update(current)

    def failed(exc: Exception) -> None:
        _say(f"dbt-openmirror replay: {getattr(exc, 'msg', exc)} (trying again)", error=True)

    def request_stop(signum: int, frame: object) -> None:
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = {number: signal.signal(number, request_stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        mirror.watch(interval, stop, report, failed)
    except KeyboardInterrupt:
        pass
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 0


def _mirror_status(args: argparse.Namespace, storage: LandingZoneStorage) -> tuple[str | None, str | None]:
    """(tables.json text, replicator.json text): the local mirror's with --target, otherwise the
    service's Files/Monitoring beside the landing zone."""
    if args.target:
        target = Path(args.target).resolve()
        if not target.is_dir():
            raise OpenMirrorError(f"the local mirror {target} does not exist")
        path = target / STATUS_FILE
        return (path.read_text(encoding="utf-8") if path.exists() else None), None
    return storage.read_monitoring(TABLES_FILE), storage.read_monitoring(REPLICATOR_FILE)


def _status(args: argparse.Namespace) -> int:
    storage = _existing_landing_zone(args)
    publisher = Publisher(storage)
    leases = LeaseManager(storage)
    source = "local mirror" if args.target else "Files/Monitoring"
    replicator_text = None
    try:
        tables_text, replicator_text = _mirror_status(args, storage)
        mirrored = parse_tables(tables_text, f"{source} {TABLES_FILE}") if tables_text else {}
    except (ValueError, PublishError) as exc:  # caught while the mirror rewrites it: the landing zone is still shown
        _say(f"mirror status not readable: {exc}")
        mirrored = {}
    if replicator_text:
        _say(f"mirrored database ({source}): {describe_replicator(replicator_text)}")
    _say(f"{'table':40} {'last file':>9} {'waiting':>7}  mirror ({source})")
    for schema, table, folder in table_folders(storage):
        status = mirrored.get((schema, table))
        mirror = status.describe() if status is not None else "-"
        try:
            state = publisher.table_state(folder)
        except OpenMirrorError as exc:  # e.g. a broken _metadata.json: the other tables are still shown
            _say(f"{schema + '.' + table:40} {'-':>9} {'-':>7}  {mirror}")
            _say(f"    {exc.msg}")
            continue
        waiting = _waiting_files(storage, folder)
        _say(f"{schema + '.' + table:40} {state.last_sequence_number:>9} {waiting:>7}  {mirror}")
        for note in _publisher_notes(leases, folder, state):
            _say(f"    {note}")
    staged = staged_runs(storage)
    if staged:
        _say("staged by package mode, not yet published (run `dbt-openmirror publish`):")
    for run in staged:
        _say(f"    {run.table_folder}: {run.describe()}, {run.state} at {run.recorded_at:%Y-%m-%d %H:%M:%S} UTC")
    return 0


def _waiting_files(storage: LandingZoneStorage, folder: str) -> int:
    """Data files still in the table folder, by the table's own naming (`_metadata.json`)."""
    text = storage.read_text(f"{folder}/{METADATA_FILE}")
    metadata = (parse_table_metadata(text).metadata if text is not None else None) or TableMetadata()
    names = [n for n in storage.list_names(folder) if not n.startswith("_")]
    if metadata.file_detection == LAST_UPDATE_TIME:
        return sum(1 for n in names if n.endswith(f".{metadata.extension}"))
    return sum(1 for n in names if parse_sequence_number(n, metadata.extension) is not None)


def _publisher_notes(leases: LeaseManager, folder: str, state: TableFolderState) -> list[str]:
    """Who is publishing the table now, what stops the next publish, and a publish an interrupted
    run left unfinished."""
    notes = []
    lease = leases.current(folder)
    if lease is not None and not lease.holder.released:
        notes.append(f"lease: {leases.describe(lease)}")
    if state.folder_conflict:
        notes.append(f"next publish refused: {state.folder_conflict}")
    unjournaled = state.unjournaled_files()
    if unjournaled:
        notes.append(
            f"the folder {unjournaled}: a dbt run refuses it, as does `dbt-openmirror publish`, "
            "unless it is a --full-refresh"
        )
    if state.pending is not None:
        notes.append(
            f"unfinished publish of run {state.pending.run_id} ({len(state.pending.files)} files "
            f"after {state.pending.base_sequence_number}); the next dbt run of "
            f"'{state.pending.model}' (or `dbt-openmirror publish` in package mode) finishes or discards it"
        )
    return notes


def _validate(args: argparse.Namespace) -> int:
    findings = validate(_existing_landing_zone(args))
    for finding in findings:
        _say(str(finding))
    errors = sum(1 for f in findings if f.severity == ERROR)
    _say(f"{errors} errors, {len(findings) - errors} warnings")
    return 1 if errors else 0


def _webhook_receiver(args: argparse.Namespace) -> WebhookReceiver:
    """The receiver publishing the landing zone's staged runs; the secret only from the environment."""
    secret = os.environ.get(WEBHOOK_SECRET_VARIABLE)
    if not secret:
        raise OpenMirrorError(
            f"set {WEBHOOK_SECRET_VARIABLE} to the webhook's secret token from dbt Cloud "
            "(it is not accepted on the command line)"
        )
    publisher = PackagePublisher(
        _landing_zone(args),  # it may start before Spark first writes the folder
        rebuild_wait_seconds=args.rebuild_wait_seconds,
        log=logging.getLogger("dbt-openmirror").info,
    )
    return WebhookReceiver(
        publisher.publish,
        secret.encode(),
        args.host,
        args.port,
        max_age_seconds=args.max_age_seconds,
        job_ids=args.job_id or (),
    )


def _webhook(args: argparse.Namespace) -> int:
    receiver = _webhook_receiver(args)
    # Once the receiver runs (not for a refused start). force: a library dbt imports
    # (snowplow_tracker) configures the root logger at WARNING on import, which would silence
    # every publish this receiver logs.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True)
    # Service managers stop with SIGTERM: end as on Ctrl-C, finishing the publish under way.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    _say(f"listening for dbt Cloud webhooks on {receiver.url}")
    try:
        receiver.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def _landing_zone_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "landing_zone",
        help="landing zone: a folder, a file:// URL, a OneLake / ADLS Gen2 https:// URL or its abfss:// form",
    )
    command.add_argument(
        "--auth",
        choices=AUTH_METHODS,
        default=DEFAULT,
        help="OneLake sign-in (service_principal reads the secret from AZURE_CLIENT_SECRET)",
    )
    command.add_argument("--tenant-id", help="OneLake: tenant of the service principal or CLI login")
    command.add_argument("--client-id", help="OneLake: service principal or user-assigned managed identity")


def _seconds(text: str) -> float:
    """A duration option: a number of seconds, not negative."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return value


def _positive_seconds(text: str) -> float:
    """A duration that 0 would defeat (a poll without pause, a webhook refusing every event)."""
    value = _seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds more than 0")
    return value


def _port(text: str) -> int:
    """A TCP port to listen on; 0 lets the system choose one."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)")
    return int(text)


def _rebuild_wait_argument(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--rebuild-wait-seconds",
        type=_seconds,
        default=DEFAULT_REBUILD_WAIT_SECONDS,
        help="how long a full load waits for the mirroring service to drop the old table (and an "
        f"incremental run for it to list the table again); default {DEFAULT_REBUILD_WAIT_SECONDS}",
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="dbt-openmirror", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="apply a landing zone to local Delta tables")
    _landing_zone_arguments(replay)
    replay.add_argument("--target", required=True, help="folder of the local mirrored database")
    replay.add_argument("--watch", action="store_true", help="keep polling every --interval seconds until stopped")
    replay.add_argument("--interval", type=_positive_seconds, default=5.0, help="seconds between polls with --watch")
    replay.set_defaults(run=_replay)
    check = commands.add_parser("validate", help="check a landing zone against the spec (read-only)")
    _landing_zone_arguments(check)
    check.set_defaults(run=_validate)
    publish = commands.add_parser("publish", help="publish the runs package mode staged, in order, exactly once")
    _landing_zone_arguments(publish)
    publish.add_argument("--watch", action="store_true", help="keep publishing every --interval seconds")
    publish.add_argument("--interval", type=_positive_seconds, default=60.0, help="seconds between polls with --watch")
    publish.add_argument(
        "--lease-wait-seconds",
        type=_seconds,
        default=0.0,
        help="wait this long for a table another publisher holds (default: fail at once)",
    )
    _rebuild_wait_argument(publish)
    publish.set_defaults(run=_publish)
    status = commands.add_parser(
        "status", help="per table: last number, files waiting, the mirror's status (Files/Monitoring)"
    )
    _landing_zone_arguments(status)
    status.add_argument("--target", help="show the local mirror written by `replay` instead of the service's")
    status.set_defaults(run=_status)
    webhook = commands.add_parser(
        "webhook",
        help=f"receive dbt Cloud's job.run.completed webhook and publish the staged runs "
        f"(secret from {WEBHOOK_SECRET_VARIABLE})",
    )
    _landing_zone_arguments(webhook)
    webhook.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    webhook.add_argument("--port", type=_port, default=8080, help="port to listen on (default 8080)")
    webhook.add_argument(
        "--job-id",
        type=int,
        action="append",
        metavar="N",
        help="publish only after these dbt Cloud jobs (repeatable; default: every job)",
    )
    webhook.add_argument(
        "--max-age-seconds",
        type=_positive_seconds,
        default=DEFAULT_MAX_AGE_SECONDS,
        help=f"refuse events whose timestamp is further from now (default {DEFAULT_MAX_AGE_SECONDS})",
    )
    _rebuild_wait_argument(webhook)
    webhook.set_defaults(run=_webhook)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except OpenMirrorError as exc:  # a message for the user, not a traceback
        _say(f"dbt-openmirror {args.command}: {exc.msg}", error=True)
        return 2
    except OSError as exc:  # e.g. a target folder that cannot be written
        _say(f"dbt-openmirror {args.command}: {exc}", error=True)
        return 2
    except KeyboardInterrupt:  # Ctrl-C of a command that does not watch (those stop on it cleanly)
        _say(f"dbt-openmirror {args.command}: interrupted{_AFTER_INTERRUPT.get(args.command, '')}", error=True)
        return 130


#: What an interrupted command leaves to its next run (both are exactly once at any point).
_AFTER_INTERRUPT = {
    "publish": "; the next publish finishes what this one started",
    "replay": "; the next replay goes on from the last file applied",
}


def console_main() -> None:
    """The `dbt-openmirror` command. It ends the process without the interpreter's teardown:
    there pyarrow 26 now and then aborts (SIGABRT, exit 134, "terminate called without an active
    exception") after a command that succeeded, which a scheduler would record as a failure."""
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    console_main()

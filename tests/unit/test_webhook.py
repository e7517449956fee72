"""The dbt Cloud webhook receiver, over real HTTP on loopback: only signed, fresh, first-seen
`job.run.completed` events trigger a publish; the answer never waits for the publish; triggers
during a publish coalesce into one more."""

import http.client
import json
import logging
import threading
import uuid
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

import pytest

from dbt.adapters.openmirror.cli import WEBHOOK_SECRET_VARIABLE, _webhook_receiver, main, parser
from tests.mirror_oracle import replay
from tests.unit.package_staging import FOLDER, stage_run
from dbt.adapters.openmirror.webhook import (
    WEBHOOK_PATH,
    RecentEvents,
    WebhookReceiver,
    parse_timestamp,
    sign,
)

SECRET = b"whsec-test-0123456789abcdef"
WAIT = 5  # seconds: a bound for waits that normally end in milliseconds


def dbt_cloud_time(offset_seconds: float = 0) -> str:
    """Now (shifted), written as dbt Cloud writes `timestamp`: nanoseconds and Z."""
    moment = datetime.now(timezone.utc) + timedelta(seconds=offset_seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"


def event(event_type="job.run.completed", job_id="123", event_id=None, timestamp=None) -> bytes:
    """A body shaped like the documented example payloads."""
    return json.dumps({
        "accountId": 1,
        "eventId": event_id or f"wev_{uuid.uuid4().hex}",
        "timestamp": timestamp or dbt_cloud_time(),
        "eventType": event_type,
        "webhookName": "publish landing zone",
        "data": {"jobId": job_id, "runId": "12345", "runStatus": "Success", "runStatusCode": 10},
    }).encode()


def request(url: str, body: bytes = b"", authorization=None, method="POST", path=None, headers=None):
    """(status, response headers, text) of one request to the receiver at `url`."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT)
    try:
        sent = dict(headers or {})
        if authorization is not None:
            sent["Authorization"] = authorization
        connection.request(method, path or parts.path, body=body if method == "POST" else None, headers=sent)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        connection.close()


def deliver(url: str, body: bytes, secret: bytes = SECRET) -> int:
    """What dbt Cloud does: POST the body signed with the secret; the status code."""
    return request(url, body, authorization=sign(secret, body))[0]


class Publishes:
    """A publish action that counts its calls; `blocker`, when given, holds the first call."""

    def __init__(self, blocker: threading.Event = None, fail_first: bool = False):
        self.count = 0
        self._blocker = blocker
        self._fail_first = fail_first
        self.started = threading.Event()
        self._changed = threading.Condition()

    def __call__(self):
        with self._changed:
            self.count += 1
            number = self.count
        self.started.set()
        try:
            if number == 1 and self._blocker is not None:
                assert self._blocker.wait(WAIT)
            if number == 1 and self._fail_first:
                raise RuntimeError("landing zone unreachable")
        finally:
            with self._changed:
                self._changed.notify_all()

    def wait_for(self, calls: int) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.count >= calls, WAIT)


@contextmanager
def receiving(publish, **options):
    receiver = WebhookReceiver(publish, SECRET, "127.0.0.1", 0, **options).start()
    try:
        yield receiver.url
    finally:
        # stop() also finishes any publish still requested, so counts read afterwards are final.
        receiver.stop()


def test_a_signed_completed_event_is_accepted_at_once_and_publishes():
    publishes = Publishes()
    with receiving(publishes) as url:
        assert deliver(url, event()) == 202
        assert publishes.wait_for(1)
    assert publishes.count == 1


@pytest.mark.parametrize("authorization", [
    lambda body: None,
    lambda body: "",
    lambda body: sign(b"another secret", body),
    lambda body: sign(SECRET, body + b" "),
    lambda body: "sha256=" + sign(SECRET, body),  # not dbt Cloud's format
], ids=["missing", "empty", "other-secret", "other-body", "prefixed"])
def test_a_missing_or_wrong_signature_is_refused_and_publishes_nothing(authorization):
    publishes = Publishes()
    body = event()
    with receiving(publishes) as url:
        status, _, text = request(url, body, authorization=authorization(body))
    assert (status, text.strip()) == (401, "missing or invalid signature")
    assert publishes.count == 0


@pytest.mark.parametrize("offset", [-400, 400], ids=["stale", "future"])
def test_an_event_outside_the_time_window_is_refused(offset):
    publishes = Publishes()
    with receiving(publishes, max_age_seconds=300) as url:
        assert deliver(url, event(timestamp=dbt_cloud_time(offset))) == 401
        # Inside the window is fine, either way.
        assert deliver(url, event(timestamp=dbt_cloud_time(offset / 2))) == 202
        assert publishes.wait_for(1)
    assert publishes.count == 1


def test_a_replayed_event_is_refused():
    publishes = Publishes()
    body = event(event_id="wev_replayed")
    with receiving(publishes) as url:
        assert deliver(url, body) == 202
        assert deliver(url, body) == 401
        # Re-signing a fresh body does not help an event id that was already accepted.
        assert deliver(url, event(event_id="wev_replayed")) == 401
    assert publishes.count == 1


@pytest.mark.parametrize("body", [
    b"not json",
    b"\xff\xfe",
    b"[1, 2]",
    json.dumps({"eventId": "wev_1", "eventType": "job.run.completed", "timestamp": "now", "data": {"jobId": "1"}}).encode(),
    json.dumps({"eventType": "job.run.completed", "timestamp": dbt_cloud_time(), "data": {"jobId": "1"}}).encode(),
    json.dumps({"eventId": "wev_1", "eventType": "job.run.completed", "timestamp": dbt_cloud_time()}).encode(),
    json.dumps({"eventId": "wev_1", "eventType": "job.run.completed", "timestamp": dbt_cloud_time(),
                "data": {"runId": "1"}}).encode(),
], ids=["text", "not-utf8", "array", "bad-timestamp", "no-event-id", "no-data", "no-job-id"])
def test_a_signed_body_that_is_not_an_event_is_a_bad_request(body):
    publishes = Publishes()
    with receiving(publishes) as url:
        assert deliver(url, body) == 400
    assert publishes.count == 0


@pytest.mark.parametrize("event_type", ["job.run.started", "job.run.errored"])
def test_other_event_types_are_acknowledged_without_publishing(event_type):
    publishes = Publishes()
    with receiving(publishes) as url:
        status, _, text = request(url, body := event(event_type), authorization=sign(SECRET, body))
    assert (status, text.strip()) == (200, "ignored: not job.run.completed")
    assert publishes.count == 0


def test_only_the_selected_jobs_publish():
    publishes = Publishes()
    with receiving(publishes, job_ids=[123, 124]) as url:
        assert deliver(url, event(job_id="456")) == 200
        assert deliver(url, event(job_id=124)) == 202  # a number in the payload is the same job
        assert publishes.wait_for(1)
    assert publishes.count == 1


def test_path_method_and_size_are_checked():
    publishes = Publishes()
    body = event()
    with receiving(publishes, max_body_bytes=4096) as url:
        assert request(url, body, sign(SECRET, body), path="/other")[0] == 404
        assert request(url, method="GET", path="/other")[0] == 404
        status, headers, _ = request(url, method="GET")
        assert (status, headers["Allow"]) == (405, "POST")
        assert request(url, method="PUT")[0] == 405
        # Refused from the declared length alone, before anything is read.
        status, _, _ = request(url, authorization=sign(SECRET, body), headers={"Content-Length": "4097"})
        assert status == 413
        padded = body[:-1] + b" " * (4096 - len(body)) + b"}"
        assert deliver(url, padded) == 202  # exactly the limit is accepted
        assert publishes.wait_for(1)
    assert publishes.count == 1
    assert WEBHOOK_PATH in url


def test_triggers_during_a_publish_coalesce_into_one_more():
    release = threading.Event()
    publishes = Publishes(blocker=release)
    with receiving(publishes) as url:
        assert deliver(url, event()) == 202
        assert publishes.started.wait(WAIT)
        # The publish is held, yet each of these is answered at once.
        assert [deliver(url, event()) for _ in range(3)] == [202, 202, 202]
        release.set()
        assert publishes.wait_for(2)
    assert publishes.count == 2


def test_a_failing_publish_is_logged_and_the_worker_goes_on(caplog):
    publishes = Publishes(fail_first=True)
    with caplog.at_level(logging.INFO, logger="dbt.adapters.openmirror.webhook"):
        with receiving(publishes) as url:
            assert deliver(url, event()) == 202
            assert publishes.started.wait(WAIT)
            assert deliver(url, event()) == 202
            assert publishes.wait_for(2)
    assert publishes.count == 2
    failures = [r for r in caplog.records if r.getMessage().startswith("publish failed")]
    assert len(failures) == 1 and "landing zone unreachable" in caplog.text


def test_the_secret_and_valid_signatures_never_reach_the_logs(caplog):
    forged = event()
    accepted = event()
    publishes = Publishes(fail_first=True)
    with caplog.at_level(logging.DEBUG, logger="dbt.adapters.openmirror.webhook"):
        with receiving(publishes) as url:
            assert request(url, forged, authorization="0" * 64)[0] == 401
            assert deliver(url, accepted) == 202
            assert publishes.wait_for(1)
    logged = caplog.text
    assert "refused POST" in logged and "publish requested" in logged and "publish failed" in logged
    for secret_or_proof in (SECRET.decode(), SECRET.hex(), sign(SECRET, forged), sign(SECRET, accepted)):
        assert secret_or_proof not in logged


def test_dbt_cloud_timestamps_keep_their_nanoseconds_and_zone():
    documented = parse_timestamp("2023-01-31T19:29:35.789265936Z")
    whole_second = datetime(2023, 1, 31, 19, 29, 35, tzinfo=timezone.utc).timestamp()
    assert documented == pytest.approx(whole_second + 0.789265936, abs=1e-6)
    assert parse_timestamp("2023-01-31T20:29:35+01:00") == whole_second
    with pytest.raises(ValueError):
        parse_timestamp("2023-01-31 19:29:35")


def test_recent_events_are_forgotten_once_the_time_window_refuses_them_anyway():
    recent = RecentEvents(max_age_seconds=300, limit=3)
    assert recent.remember("a", now=1000)
    assert not recent.remember("a", now=1000 + 600)  # its timestamp may still pass the check
    assert recent.remember("a", now=1000 + 601)  # by now a replay would be refused as stale
    for name in "bcd":
        assert recent.remember(name, now=1700)
    assert recent.remember("a", now=1700)  # the oldest id went when the limit was passed
    assert not recent.remember("d", now=1700)


def test_cli_needs_the_secret_in_the_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(WEBHOOK_SECRET_VARIABLE, raising=False)
    assert main(["webhook", str(tmp_path), "--port", "0"]) == 2
    assert WEBHOOK_SECRET_VARIABLE in capsys.readouterr().err
    with pytest.raises(SystemExit):  # never on the command line
        parser().parse_args(["webhook", str(tmp_path), "--secret", "x"])


def test_cli_receiver_publishes_the_staged_runs_of_its_landing_zone(tmp_path, monkeypatch):
    """The command wires its landing zone into package mode's publisher."""
    stage_run(tmp_path, "run-a", 1, [{"id": 1, "amount": 10, "__rowMarker__": 0}], load="full")
    published = tmp_path / FOLDER / "00000000000000000001.parquet"
    monkeypatch.setenv(WEBHOOK_SECRET_VARIABLE, SECRET.decode())
    args = parser().parse_args(["webhook", str(tmp_path), "--port", "0", "--job-id", "7", "--max-age-seconds", "60"])
    with _webhook_receiver(args) as receiver:
        assert deliver(receiver.url, event(job_id="8")) == 200
        assert deliver(receiver.url, event(job_id="7", timestamp=dbt_cloud_time(-90))) == 401
        assert not published.exists()
        assert deliver(receiver.url, event(job_id="7")) == 202
    # Stopping the receiver finishes the publish under way.
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 10}]

"""The dbt Cloud webhook receiver, over real HTTP on loopback: only signed, fresh, first-seen
`job.run.completed` events trigger a publish; the answer never waits for the publish; triggers
during a publish coalesce into one more. Malformed and slow requests are refused within bounds
(raw sockets send what a well-behaved client would not)."""

import http.client
import json
import logging
import select
import socket
import threading
import time
import unicodedata
import uuid
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from email.message import Message
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.openmirror.tools.cli import WEBHOOK_SECRET_VARIABLE, _webhook_receiver, main, parser
from dbt.adapters.openmirror.tools.http_limits import ConnectionSlots
from dbt.adapters.openmirror.tools.webhook import (
    WEBHOOK_PATH,
    RecentEvents,
    Rejected,
    WebhookEvent,
    WebhookReceiver,
    declared_length,
    parse_event,
    parse_timestamp,
    sign,
)
from tests.support.mirror_oracle import replay
from tests.support.package_staging import FOLDER, stage_run

SECRET = b"whsec-test-0123456789abcdef"
WAIT = 5  # seconds: a bound for waits that normally end in milliseconds


def dbt_cloud_time(offset_seconds: float = 0) -> str:
    """Now (shifted), written as dbt Cloud writes `timestamp`: nanoseconds and Z."""
    moment = datetime.now(timezone.utc) + timedelta(seconds=offset_seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"


def event(event_type="job.run.completed", job_id="123", event_id=None, timestamp=None) -> bytes:
    """A body shaped like the documented example payloads."""
    return json.dumps(
        {
            "accountId": 1,
            "eventId": event_id or f"wev_{uuid.uuid4().hex}",
            "timestamp": timestamp or dbt_cloud_time(),
            "eventType": event_type,
            "webhookName": "publish landing zone",
            "data": {"jobId": job_id, "runId": "12345", "runStatus": "Success", "runStatusCode": 10},
        }
    ).encode()


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


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=WAIT)


def raw_exchange(url: str, data: bytes, end_body: bool = False) -> tuple[int | None, str]:
    """Send `data` as it is (`end_body`: then close our side); (status, body) of the answer, or
    (None, "") when the receiver closed the connection without one."""
    with connect(url) as sock:
        sock.sendall(data)
        if end_body:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    head, _, body = answer.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/"):
        return None, ""
    return int(head.split()[1]), body.decode()


def closed_by_peer(sock: socket.socket) -> bool:
    """True once the receiver has closed `sock` (never blocks)."""
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(65536) == b""
    except ConnectionError:
        return True


def eventually(condition) -> bool:
    """Whether `condition()` holds within WAIT seconds."""
    until = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > until:
            return False
        time.sleep(0.02)
    return True


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
def receiving(publish, host="127.0.0.1", **options):
    receiver = WebhookReceiver(publish, SECRET, host, 0, **options).start()
    try:
        yield receiver.url
    finally:
        # stop() also finishes any publish still requested, so counts read afterwards are final.
        receiver.stop()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"], ids=["ipv4", "ipv6"])
def test_a_signed_completed_event_is_accepted_at_once_and_publishes(host):
    publishes = Publishes()
    with receiving(publishes, host) as url:
        assert deliver(url, event()) == 202
        assert publishes.wait_for(1)
    assert publishes.count == 1


@pytest.mark.parametrize(
    "authorization",
    [
        lambda body: None,
        lambda body: "",
        lambda body: sign(b"another secret", body),
        lambda body: sign(SECRET, body + b" "),
        lambda body: "sha256=" + sign(SECRET, body),  # not dbt Cloud's format
    ],
    ids=["missing", "empty", "other-secret", "other-body", "prefixed"],
)
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


def test_a_retried_delivery_is_acknowledged_without_a_second_publish():
    """dbt Cloud retries a delivery whose answer it did not get (10 s timeout, lost answer): the
    retry is the same signed body. A captured request sent again is indistinguishable and equally
    harmless: acknowledged, nothing done."""
    publishes = Publishes()
    body = event(event_id="wev_retried")
    with receiving(publishes) as url:
        assert deliver(url, body) == 202
        assert publishes.wait_for(1)
        status, _, text = request(url, body, authorization=sign(SECRET, body))
        assert (status, text.strip()) == (200, "already received")
        # Re-signed with another body, the event id is still the one already acted on.
        assert deliver(url, event(event_id="wev_retried")) == 200
        # Without the signature it learns nothing, duplicate or not.
        status, _, text = request(url, body, authorization="0" * 64)
        assert (status, text.strip()) == (401, "missing or invalid signature")
        # The time window still refuses an old one, seen before or not.
        assert deliver(url, event(event_id="wev_retried", timestamp=dbt_cloud_time(-400))) == 401
    assert publishes.count == 1


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"\xff\xfe",
        b"[1, 2]",
        json.dumps(
            {"eventId": "wev_1", "eventType": "job.run.completed", "timestamp": "now", "data": {"jobId": "1"}}
        ).encode(),
        json.dumps({"eventType": "job.run.completed", "timestamp": dbt_cloud_time(), "data": {"jobId": "1"}}).encode(),
        json.dumps({"eventId": "wev_1", "eventType": "job.run.completed", "timestamp": dbt_cloud_time()}).encode(),
        json.dumps(
            {
                "eventId": "wev_1",
                "eventType": "job.run.completed",
                "timestamp": dbt_cloud_time(),
                "data": {"runId": "1"},
            }
        ).encode(),
        b"[" * 60_000,  # deeper than Python's recursion limit, within the size limit
        b'{"data": ' * 6_000,
        b'{"eventId": ' + b"1" * 5000 + b"}",  # more digits than int() converts
        json.dumps(
            {
                "eventId": "wev_1",
                "eventType": "job.run.completed",
                "timestamp": "\u0662023-01-31T19:29:35Z",
                "data": {"jobId": "1"},
            }
        ).encode(),  # an Arabic-Indic digit in the year
    ],
    ids=[
        "text",
        "not-utf8",
        "array",
        "bad-timestamp",
        "no-event-id",
        "no-data",
        "no-job-id",
        "deeply-nested-array",
        "deeply-nested-object",
        "huge-number",
        "non-ascii-digit",
    ],
)
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
        for method in ("HEAD", "TRACE", "BREW"):  # not 501 with an HTML page
            status, headers, text = request(url, method=method)
            assert (status, headers["Allow"], headers["Content-Type"]) == (405, "POST", "text/plain; charset=utf-8")
            assert text == ("" if method == "HEAD" else "only POST\n")
        # Refused from the declared length alone, before anything is read.
        status, _, _ = request(url, authorization=sign(SECRET, body), headers={"Content-Length": "4097"})
        assert status == 413
        padded = body[:-1] + b" " * (4096 - len(body)) + b"}"
        assert deliver(url, padded) == 202  # exactly the limit is accepted
        assert publishes.wait_for(1)
    assert publishes.count == 1
    assert WEBHOOK_PATH in url


AUTHORIZED = b"Authorization: " + sign(SECRET, b"").encode() + b"\r\n"


@pytest.mark.parametrize(
    "framing, status, reason",
    [
        (b"Content-Length: -1\r\n", 400, "invalid Content-Length"),
        ("Content-Length: \uff11\uff12\r\n".encode(), 400, "invalid Content-Length"),  # full-width digits
        (b"Content-Length: \xb2\r\n", 400, "invalid Content-Length"),  # '²' in Latin-1: str.isdigit() says yes
        (b"Content-Length: 1e3\r\n", 400, "invalid Content-Length"),
        (b"Content-Length: +12\r\n", 400, "invalid Content-Length"),
        (b"Content-Length: 12, 12\r\n", 400, "invalid Content-Length"),
        (b"Content-Length:\r\n", 400, "invalid Content-Length"),
        (b"Content-Length: 12\r\nContent-Length: 12\r\n", 400, "more than one Content-Length"),
        (b"Content-Length: " + b"9" * 5000 + b"\r\n", 413, "body larger than"),
        (b"Content-Length: 99999999999999999999999\r\n", 413, "body larger than"),
        (b"Transfer-Encoding: chunked\r\nContent-Length: 12\r\n", 400, "Transfer-Encoding with Content-Length"),
        (b"Content-Length: 12\r\nTransfer-Encoding: chunked\r\n", 400, "Transfer-Encoding with Content-Length"),
        (b"Transfer-Encoding: chunked\r\n", 411, "chunked"),
    ],
    ids=[
        "negative",
        "full-width",
        "superscript",
        "exponent",
        "plus",
        "list",
        "empty",
        "twice",
        "5000-digits",
        "beyond-int64",
        "te-then-cl",
        "cl-then-te",
        "chunked",
    ],
)
def test_malformed_framing_is_refused_before_any_body_is_read(framing, status, reason):
    publishes = Publishes()
    with receiving(publishes) as url:
        answer = raw_exchange(url, b"POST /webhook HTTP/1.1\r\nHost: x\r\n" + AUTHORIZED + framing + b"\r\n")
        assert answer[0] == status and reason in answer[1]
        assert deliver(url, event()) == 202  # and the receiver goes on
    assert publishes.count == 1


def test_a_body_shorter_than_its_content_length_is_a_bad_request():
    body = event()
    head = b"POST /webhook HTTP/1.0\r\nContent-Length: %d\r\nAuthorization: %s\r\n\r\n" % (
        len(body) + 10,
        sign(SECRET, body).encode(),
    )
    with receiving(Publishes()) as url:
        status, text = raw_exchange(url, head + body, end_body=True)
    assert status == 400 and "shorter than its Content-Length" in text


@pytest.mark.parametrize("target", ["http://[/webhook", "http://elsewhere/webhook", "/webhook/../webhook"])
def test_other_request_targets_are_not_the_webhook(target):
    """Only the path itself: an absolute URL is not taken apart (nor does it raise)."""
    publishes = Publishes()
    body = event()
    head = b"POST %s HTTP/1.0\r\nContent-Length: %d\r\nAuthorization: %s\r\n\r\n" % (
        target.encode(),
        len(body),
        sign(SECRET, body).encode(),
    )
    with receiving(publishes) as url:
        assert raw_exchange(url, head + body)[0] == 404
    assert publishes.count == 0


@pytest.mark.parametrize(
    "drip", [b"", b"POST /webhook HTTP/1.0\r\nX-Padding: " + b"a" * 1000], ids=["idle", "one-byte-at-a-time"]
)
def test_a_request_not_complete_by_its_deadline_is_cut_off(drip):
    """The socket timeout restarts with every byte; the deadline is for the whole request."""
    with receiving(Publishes(), request_seconds=1) as url:
        with connect(url) as sock:

            def cut_off():
                if drip and not closed_by_peer(sock):
                    try:
                        sock.send(drip[:1])
                    except ConnectionError:
                        return True
                    time.sleep(0.1)  # a byte every 0.1 s: never quiet long enough for a per-read timeout
                return closed_by_peer(sock)

            assert eventually(cut_off)


def test_slow_clients_beyond_the_connection_cap_neither_add_threads_nor_starve_a_delivery():
    cap = 4
    publishes = Publishes()
    # Their deadline is far away: only the cap can make room before it.
    with receiving(publishes, max_connections=cap, request_seconds=60) as url:
        baseline = threading.active_count()
        slow = []
        for _ in range(3 * cap):
            slow.append(connect(url))
            slow[-1].sendall(b"POST /webhook HTTP/1.0\r\n")
        try:
            closed = set()

            def cap_holds():
                closed.update(i for i, sock in enumerate(slow) if i not in closed and closed_by_peer(sock))
                return len(closed) >= len(slow) - cap

            assert eventually(cap_holds)
            assert eventually(lambda: threading.active_count() - baseline <= cap)
            # The oldest slow clients made room; a delivery is answered at once, not after 60 s.
            assert deliver(url, event()) == 202
            assert publishes.wait_for(1)
        finally:
            for sock in slow:
                sock.close()
    assert publishes.count == 1


def test_only_connections_still_receiving_give_way_to_new_ones():
    """A connection whose request is in is answered in moments: it is never cut off for a newcomer,
    which is closed instead when no slot frees up."""
    slots = ConnectionSlots(limit=1, request_seconds=60)
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        (answering, _), (newcomer, _), (later, _) = pairs
        assert slots.admit(answering)
        slots.received(answering)
        assert not slots.admit(newcomer)
        assert not slots.connection(answering).evicted
        slots.release(answering)
        assert slots.admit(later)
    finally:
        for pair in pairs:
            for sock in pair:
                sock.close()


def test_what_clients_send_reaches_the_logs_escaped(caplog):
    """Control characters and terminal escape sequences from the request line or a signed body
    would forge log lines or rewrite the operator's terminal."""
    hostile = "\r\n2026-01-01 INFO publish finished\x1b]0;owned\x07\x1b[2J\u202e"
    publishes = Publishes()
    with caplog.at_level(logging.DEBUG, logger="dbt.adapters.openmirror.tools.webhook"):
        with receiving(publishes) as url:
            path = b"/webhook\x1b]0;owned\x07\x1b[2J\x9b31m"
            assert raw_exchange(url, b"POST " + path + b" HTTP/1.0\r\nContent-Length: 0\r\n\r\n")[0] == 404
            assert raw_exchange(url, b"GET /\x1b[31m\x7f HTTP/1.0\r\n\r\n")[0] == 404
            assert raw_exchange(url, b"BREW /\x1b[31m HTTP/1.0\r\n\r\n")[0] == 404
            body = event(event_id="wev_" + hostile, job_id="1" + hostile)
            assert deliver(url, body) == 202
            assert deliver(url, body) == 200
            assert deliver(url, event(event_type="job.run." + hostile)) == 200
            assert publishes.wait_for(1)
    assert "\\x1b" in caplog.text  # logged, escaped
    for record in caplog.records:
        message = record.getMessage()
        assert not [c for c in message if unicodedata.category(c).startswith("C")], message


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
    with caplog.at_level(logging.INFO, logger="dbt.adapters.openmirror.tools.webhook"):
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
    with caplog.at_level(logging.DEBUG, logger="dbt.adapters.openmirror.tools.webhook"):
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


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
TIMESTAMPS = st.from_regex(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,12})?(Z|[+-]\d{2}:\d{2})", fullmatch=True)
EVENTS = st.fixed_dictionaries(
    {
        "eventId": st.text() | JSON,
        "eventType": st.sampled_from(["job.run.completed", "job.run.started"]) | JSON,
        "timestamp": TIMESTAMPS | JSON,
        "data": JSON
        | st.fixed_dictionaries({"jobId": st.text() | st.integers() | JSON, "runId": JSON, "runStatus": JSON}),
    }
)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300) | JSON.map(json.dumps).map(str.encode) | EVENTS.map(json.dumps).map(str.encode))
def test_any_body_parses_to_an_event_or_a_bad_request(body):
    try:
        parsed = parse_event(body)
    except Rejected as refusal:
        assert refusal.status == 400
    else:
        assert isinstance(parsed, WebhookEvent) and parsed.event_id and parsed.job_id
        assert isinstance(parsed.timestamp, float)


HEADER_TEXT = st.text(st.characters(max_codepoint=255, blacklist_characters="\r\n"), max_size=24)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Content-Length", "content-length", "Transfer-Encoding"]),
            HEADER_TEXT | st.from_regex(r"[0-9]{1,30}", fullmatch=True),
        ),
        max_size=3,
    )
)
def test_any_framing_gives_a_length_within_the_limit_or_a_refusal(headers):
    message = Message()
    for name, value in headers:
        message[name] = value
    try:
        length = declared_length(message, 4096)
    except Rejected as refusal:
        assert refusal.status in (400, 411, 413)
    else:
        [value] = [v for n, v in headers]  # exactly one header, a Content-Length
        assert 0 <= length <= 4096 and length == int(value.strip(" \t"))


def test_the_command_logs_each_publish_at_info(tmp_path):
    """The command as a service manager starts it: a library dbt imports set the root logger to
    WARNING at import, and the publishes an operator needs to see were not logged."""
    import os
    import signal
    import subprocess
    import sys

    with socket.socket() as probe:  # a free port, known before the command starts
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "dbt.adapters.openmirror.tools.cli", "webhook", str(tmp_path), "--port", str(port)]
    environment = {**os.environ, WEBHOOK_SECRET_VARIABLE: SECRET.decode()}
    receiver = subprocess.Popen(command, env=environment, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}{WEBHOOK_PATH}"
        deadline = time.monotonic() + 60
        while True:
            try:
                status = deliver(url, event())
                break
            except OSError:
                assert time.monotonic() < deadline and receiver.poll() is None
                time.sleep(0.2)
        assert status == 202
    finally:
        receiver.send_signal(signal.SIGTERM)
        _, logged = receiver.communicate(timeout=60)
    assert "INFO publish requested by" in logged


@pytest.mark.parametrize("request_line", [b"\x00\x01\x02\r\n\r\n", b"POST /webhook HTTP/9.9\r\n\r\n"])
def test_a_request_http_server_refuses_is_answered_in_plain_text(request_line):
    # As every other answer of the receiver: no HTML page.
    with receiving(Publishes()) as url:
        with connect(url) as sock:
            sock.sendall(request_line)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
    # A request line it cannot read is answered as HTTP/0.9 is: the body alone.
    assert answer.startswith((b"400 Bad request syntax", b"505 Invalid HTTP version")), answer
    assert b"<" not in answer and b"\x00" not in answer, answer

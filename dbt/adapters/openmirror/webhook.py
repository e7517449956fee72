"""Receive dbt Cloud's `job.run.completed` webhook and trigger a publish of the staged runs.

What dbt Cloud sends, from its documentation (docs.getdbt.com/docs/deploy/webhooks, sections
"Validate a webhook" and "Examples of JSON payloads"):
- a POST whose `Authorization` header is the hex HMAC-SHA256 of the raw request body, keyed with the
  webhook's secret token;
- a JSON body with `eventId` ("wev_2L6ZDoilyiWzKkSA59Gmc2d7FDD"), `eventType` (`job.run.started`,
  `job.run.completed`, `job.run.errored`), `timestamp` (RFC 3339 with nanoseconds,
  "2023-01-31T19:29:35.789265936Z") and `data` with `jobId` (a string, "123"), `runId` and
  `runStatus` ("Success", "Errored", ...);
- `job.run.completed` for failed runs as well as successful ones; dbt Cloud waits 10 seconds for
  an answer, retries a delivery, and deactivates a webhook after repeated failures.

Only the standard library: the receiver is small and must not pull a web framework into the adapter.
"""

import hashlib
import hmac
import json
import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterable, Optional, Tuple
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

WEBHOOK_PATH = "/webhook"
COMPLETED = "job.run.completed"
DEFAULT_MAX_AGE_SECONDS = 300
DEFAULT_MAX_BODY_BYTES = 64 * 1024  # dbt Cloud's payloads are well under 2 KiB
DEFAULT_REMEMBERED_EVENTS = 10_000

_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})")


class Rejected(Exception):
    """A request the receiver refuses: the HTTP status and a reason safe to show the sender."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class WebhookEvent:
    event_id: str
    event_type: str
    timestamp: float  # seconds since the epoch
    job_id: str
    run_id: str
    run_status: str


def parse_timestamp(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp; dbt Cloud's carry nanoseconds, which
    `datetime.fromisoformat` rejects before Python 3.11."""
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    whole, fraction, zone = match.groups()
    moment = datetime.fromisoformat(whole + ("+00:00" if zone == "Z" else zone))
    return moment.timestamp() + (float("0." + fraction) if fraction else 0.0)


def sign(secret: bytes, body: bytes) -> str:
    """The `Authorization` value dbt Cloud sends with `body`."""
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def signature_matches(secret: bytes, body: bytes, authorization: Optional[str]) -> bool:
    if not authorization:
        return False
    # Constant time, so the comparison does not tell an attacker how many characters were right.
    return hmac.compare_digest(sign(secret, body).encode(), authorization.strip().lower().encode())


def parse_event(body: bytes) -> WebhookEvent:
    """The fields the receiver relies on; Rejected(400) when the body is not such an event."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Rejected(400, f"the body is not JSON: {exc}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), dict):
        raise Rejected(400, "the body is not a dbt Cloud event (no 'data' object)")
    data = payload["data"]
    for name, value in (("eventId", payload.get("eventId")), ("eventType", payload.get("eventType")),
                        ("timestamp", payload.get("timestamp"))):
        if not isinstance(value, str) or not value:
            raise Rejected(400, f"the event has no '{name}' string")
    job_id = data.get("jobId")
    if isinstance(job_id, bool) or not isinstance(job_id, (str, int)) or job_id == "":
        raise Rejected(400, "the event has no 'data.jobId'")
    try:
        timestamp = parse_timestamp(payload["timestamp"])
    except ValueError as exc:
        raise Rejected(400, str(exc)) from None
    return WebhookEvent(
        payload["eventId"], payload["eventType"], timestamp, str(job_id),
        str(data.get("runId", "")), str(data.get("runStatus", "")),
    )


class RecentEvents:
    """The ids of events accepted lately, to refuse a captured request sent again.

    An event accepted at time t carries a timestamp at most `max_age` ahead of t, so after t + 2 *
    max_age the staleness check refuses it anyway and its id can be forgotten. `limit` bounds the
    memory against a flood inside that window (then the oldest ids go first)."""

    def __init__(self, max_age_seconds: float, limit: int = DEFAULT_REMEMBERED_EVENTS):
        self._keep_seconds = 2 * max_age_seconds
        self._limit = limit
        self._accepted = OrderedDict()  # event id -> when it was accepted, oldest first
        self._lock = threading.Lock()

    def remember(self, event_id: str, now: float) -> bool:
        """True if `event_id` is new (and is now remembered); False for a replay."""
        with self._lock:
            while self._accepted and next(iter(self._accepted.values())) < now - self._keep_seconds:
                self._accepted.popitem(last=False)
            if event_id in self._accepted:
                return False
            self._accepted[event_id] = now
            if len(self._accepted) > self._limit:
                self._accepted.popitem(last=False)
            return True


class PublishWorker:
    """One thread that runs `publish`. Triggers arriving while a publish runs coalesce into one
    more publish afterwards: it picks up everything staged by then, so a queue would only repeat
    work. A failing publish is logged and the worker waits for the next trigger."""

    def __init__(self, publish: Callable[[], object]):
        self._publish = publish
        self._wake = threading.Condition()
        self._requested = False
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="openmirror-publish", daemon=True)
        self._thread.start()

    def trigger(self) -> None:
        with self._wake:
            self._requested = True
            self._wake.notify()

    def stop(self) -> None:
        """Finish the publish under way and one still requested, then end the thread."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._requested and not self._stopping:
                    self._wake.wait()
                if not self._requested:
                    return
                self._requested = False
            self._publish_once()

    def _publish_once(self) -> None:
        started = time.monotonic()
        try:
            self._publish()
        except Exception:  # the receiver keeps serving; the staged runs wait for the next trigger
            logger.exception("publish failed after %.1f s", time.monotonic() - started)
        else:
            logger.info("publish finished in %.1f s", time.monotonic() - started)


class WebhookReceiver:
    """An HTTP server answering dbt Cloud's webhooks on `WEBHOOK_PATH`; verified
    `job.run.completed` events (of the jobs in `job_ids`, when given) trigger `publish` in the
    background and are answered 202 at once."""

    def __init__(
        self,
        publish: Callable[[], object],
        secret: bytes,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        job_ids: Iterable[object] = (),
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ):
        if not secret:
            raise ValueError("the webhook secret is empty")
        self._secret = secret
        self._max_age = max_age_seconds
        self._job_ids = frozenset(str(j) for j in job_ids)
        self.max_body_bytes = max_body_bytes
        self._recent = RecentEvents(max_age_seconds)
        self._server = ThreadingHTTPServer((host, port), _WebhookHandler)
        self._server.receiver = self
        self._worker = PublishWorker(publish)
        self._serving: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{WEBHOOK_PATH}"

    def start(self) -> "WebhookReceiver":
        """Serve in a background thread (tests, embedding); `stop` ends it."""
        # A short poll interval: `stop` waits up to one interval for the serving loop to notice.
        self._serving = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="openmirror-webhook", daemon=True
        )
        self._serving.start()
        return self

    def stop(self) -> None:
        if self._serving is not None:
            self._server.shutdown()
            self._serving.join()
        self._server.server_close()
        self._worker.stop()

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted; then finish the publish under way."""
        try:
            self._server.serve_forever()
        finally:
            self._server.server_close()
            self._worker.stop()

    def __enter__(self) -> "WebhookReceiver":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def receive(self, authorization: Optional[str], body: bytes) -> Tuple[int, str]:
        """(status, message) for a POST to the webhook path; Rejected for a refused one."""
        # Signature first: nothing of an unauthenticated body is parsed or believed.
        if not signature_matches(self._secret, body, authorization):
            raise Rejected(401, "missing or invalid signature")
        event = parse_event(body)
        now = time.time()
        if abs(now - event.timestamp) > self._max_age:
            raise Rejected(401, f"event timestamp is more than {self._max_age:g} s away from now")
        if not self._recent.remember(event.event_id, now):
            raise Rejected(401, f"event {event.event_id} was already received")
        described = f"{event.event_type} {event.event_id} (job {event.job_id}, run {event.run_id})"
        if event.event_type != COMPLETED:
            logger.info("ignored %s: not %s", described, COMPLETED)
            return 200, f"ignored: not {COMPLETED}"
        if self._job_ids and event.job_id not in self._job_ids:
            logger.info("ignored %s: job not selected", described)
            return 200, "ignored: job not selected"
        # Failed runs too: the models that succeeded staged their files, as they would have
        # published them outside package mode.
        logger.info("publish requested by %s, run status %s", described, event.run_status or "?")
        self._worker.trigger()
        return 202, "publish requested"


class _WebhookHandler(BaseHTTPRequestHandler):
    server_version = "dbt-openmirror-webhook"
    timeout = 10  # a client stalling mid-request does not hold a thread for ever

    def do_POST(self) -> None:
        receiver: WebhookReceiver = self.server.receiver
        try:
            body = self._read_body(receiver.max_body_bytes)
            if urlsplit(self.path).path != WEBHOOK_PATH:
                raise Rejected(404, "not found")
            status, message = receiver.receive(self.headers.get("Authorization"), body)
        except Rejected as refusal:
            logger.warning("refused %s %s: %s (%d)", self.command, self.path, refusal.reason, refusal.status)
            status, message = refusal.status, refusal.reason
        self._answer(status, message)

    def _refuse_method(self) -> None:
        if urlsplit(self.path).path != WEBHOOK_PATH:
            self._answer(404, "not found")
        else:
            self._answer(405, "only POST", {"Allow": "POST"})

    do_GET = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _refuse_method

    def _read_body(self, limit: int) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None:
            raise Rejected(411, "Content-Length required")
        if not length.isdigit():
            raise Rejected(400, "invalid Content-Length")
        if int(length) > limit:
            raise Rejected(413, f"body larger than {limit} bytes")
        return self.rfile.read(int(length))

    def _answer(self, status: int, message: str, headers: Optional[dict] = None) -> None:
        data = (message + "\n").encode()
        self.send_response(status)
        for name, value in {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:  # the request line only, never headers
        logger.debug("%s %s", self.address_string(), format % args)

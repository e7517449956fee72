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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from email.message import Message
from typing import Any

from dbt.adapters.openmirror.tools.http_limits import BoundedHTTPServer, BoundedRequestHandler, ConnectionSlots

logger = logging.getLogger(__name__)

WEBHOOK_PATH = "/webhook"
COMPLETED = "job.run.completed"
DEFAULT_MAX_AGE_SECONDS = 300
DEFAULT_MAX_BODY_BYTES = 64 * 1024  # dbt Cloud's payloads are well under 2 KiB
DEFAULT_REMEMBERED_EVENTS = 10_000
# dbt Cloud gives up on an answer after 10 s: a request still arriving by then is not dbt Cloud's.
DEFAULT_REQUEST_SECONDS = 10.0
# One delivery per finished job, answered in milliseconds: a few connections at once is plenty.
DEFAULT_MAX_CONNECTIONS = 32
_LOGGED_CHARACTERS = 200

# ASCII digits: `\d` would also take other scripts' digits, which float() then reads.
_TIMESTAMP = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})"
)
_DIGITS = re.compile(r"[0-9]+")


class Rejected(Exception):
    """A request the receiver refuses: the HTTP status and a reason safe to show the sender."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def loggable(text: str) -> str:
    """`text` as printable ASCII, shortened: what a client sent never brings control characters or
    terminal escape sequences into the logs (a forged line, a rewritten terminal)."""
    escaped = text.encode("unicode_escape").decode("ascii")
    return escaped if len(escaped) <= _LOGGED_CHARACTERS else escaped[:_LOGGED_CHARACTERS] + "..."


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


def signature_matches(secret: bytes, body: bytes, authorization: str | None) -> bool:
    if not authorization:
        return False
    # Constant time, so the comparison does not tell an attacker how many characters were right.
    return hmac.compare_digest(sign(secret, body).encode(), authorization.strip().lower().encode())


def declared_length(headers: Message, limit: int) -> int:
    """The body length a request declares; Rejected unless it is one plain `Content-Length` of at
    most `limit` bytes. Anything else is refused rather than interpreted: two framings (or two
    lengths) are how requests get smuggled past a proxy that reads the other one."""
    if headers.get_all("Transfer-Encoding"):
        if headers.get_all("Content-Length"):
            raise Rejected(400, "Transfer-Encoding with Content-Length")
        raise Rejected(411, "chunked or other transfer codings are not accepted: send Content-Length")
    lengths = headers.get_all("Content-Length") or []
    if not lengths:
        raise Rejected(411, "Content-Length required")
    if len(lengths) > 1:
        raise Rejected(400, "more than one Content-Length")
    text = lengths[0].strip(" \t")
    # ASCII digits only: str.isdigit and int() also take '²' or full-width digits.
    if not _DIGITS.fullmatch(text):
        raise Rejected(400, "invalid Content-Length")
    # Compared by its digits first: int() refuses strings of more than 4300 digits.
    if len(text.lstrip("0")) > len(str(limit)) or int(text) > limit:
        raise Rejected(413, f"body larger than {limit} bytes")
    return int(text)


def _scalar_text(value: object) -> str:
    """A string or integer of the payload as text; anything else is not one of its identifiers."""
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""


def parse_event(body: bytes) -> WebhookEvent:
    """The fields the receiver relies on; Rejected(400) when the body is not such an event."""
    try:
        payload = json.loads(body)
    except ValueError as exc:  # not JSON, not UTF-8, or a number of more digits than int() takes
        raise Rejected(400, f"the body is not JSON: {exc}") from None
    except RecursionError:
        raise Rejected(400, "the body is not a dbt Cloud event (nested too deeply)") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), dict):
        raise Rejected(400, "the body is not a dbt Cloud event (no 'data' object)")
    data = payload["data"]
    for name, value in (
        ("eventId", payload.get("eventId")),
        ("eventType", payload.get("eventType")),
        ("timestamp", payload.get("timestamp")),
    ):
        if not isinstance(value, str) or not value:
            raise Rejected(400, f"the event has no '{name}' string")
    job_id = _scalar_text(data.get("jobId"))
    if not job_id:
        raise Rejected(400, "the event has no 'data.jobId'")
    try:
        timestamp = parse_timestamp(payload["timestamp"])
    except ValueError as exc:
        raise Rejected(400, str(exc)) from None
    return WebhookEvent(
        payload["eventId"],
        payload["eventType"],
        timestamp,
        job_id,
        _scalar_text(data.get("runId")),
        _scalar_text(data.get("runStatus")),
    )


class RecentEvents:
    """The ids of events accepted lately, so that one sent again (dbt Cloud's retry, or a captured
    request replayed) does nothing more.

    An event accepted at time t carries a timestamp at most `max_age` ahead of t, so after t + 2 *
    max_age the staleness check refuses it anyway and its id can be forgotten. `limit` bounds the
    memory against a flood inside that window (then the oldest ids go first)."""

    def __init__(self, max_age_seconds: float, limit: int = DEFAULT_REMEMBERED_EVENTS):
        self._keep_seconds = 2 * max_age_seconds
        self._limit = limit
        self._accepted: OrderedDict[str, float] = OrderedDict()  # event id -> when accepted, oldest first
        self._lock = threading.Lock()

    def remember(self, event_id: str, now: float) -> bool:
        """True if `event_id` is new (and is now remembered); False if it was seen already."""
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
    background and are answered 202 at once. Each request must arrive within `request_seconds`;
    at most `max_connections` are served at once."""

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
        request_seconds: float = DEFAULT_REQUEST_SECONDS,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ):
        if not secret:
            raise ValueError("the webhook secret is empty")
        self._secret = secret
        self._max_age = max_age_seconds
        self._job_ids = frozenset(str(j) for j in job_ids)
        self.max_body_bytes = max_body_bytes
        self._recent = RecentEvents(max_age_seconds)
        self._server = _WebhookServer((host, port), self, ConnectionSlots(max_connections, request_seconds))
        self._worker = PublishWorker(publish)
        self._serving: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.socket.getsockname()[:2]
        return f"http://{f'[{host}]' if ':' in host else host}:{port}{WEBHOOK_PATH}"

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
        self._close()

    def _close(self) -> None:
        self._server.server_close()
        self._server.slots.evict_receiving()
        self._worker.stop()

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted; then finish the publish under way."""
        try:
            self._server.serve_forever()
        finally:
            self._close()

    def __enter__(self) -> "WebhookReceiver":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def receive(self, authorization: str | None, body: bytes) -> tuple[int, str]:
        """(status, message) for a POST to the webhook path; Rejected for a refused one."""
        # Signature first: nothing of an unauthenticated body is parsed or believed.
        if not signature_matches(self._secret, body, authorization):
            raise Rejected(401, "missing or invalid signature")
        event = parse_event(body)
        now = time.time()
        # Before the duplicate check: a request older than the window is refused, seen or not.
        if abs(now - event.timestamp) > self._max_age:
            raise Rejected(401, f"event timestamp is more than {self._max_age:g} s away from now")
        described = (
            f"{loggable(event.event_type)} {loggable(event.event_id)} "
            f"(job {loggable(event.job_id)}, run {loggable(event.run_id)})"
        )
        if not self._recent.remember(event.event_id, now):
            # dbt Cloud retrying a delivery whose answer it missed (or a replay of one, which
            # gains nothing): the event was acted on once, so acknowledge it and do nothing.
            logger.info("ignored %s: already received", described)
            return 200, "already received"
        if event.event_type != COMPLETED:
            logger.info("ignored %s: not %s", described, COMPLETED)
            return 200, f"ignored: not {COMPLETED}"
        if self._job_ids and event.job_id not in self._job_ids:
            logger.info("ignored %s: job not selected", described)
            return 200, "ignored: job not selected"
        # Failed runs too: the models that succeeded staged their files, as they would have
        # published them outside package mode.
        logger.info("publish requested by %s, run status %s", described, loggable(event.run_status) or "?")
        self._worker.trigger()
        return 202, "publish requested"


class _WebhookServer(BoundedHTTPServer):
    """The HTTP server of one receiver, which its handlers answer for."""

    def __init__(self, address: tuple[str, int], receiver: WebhookReceiver, slots: ConnectionSlots) -> None:
        self.receiver = receiver
        super().__init__(address, _WebhookHandler, slots)


class _WebhookHandler(BoundedRequestHandler):
    server_version = "dbt-openmirror-webhook"
    server: _WebhookServer

    def do_POST(self) -> None:
        receiver = self.server.receiver
        try:
            body = self._read_body(receiver.max_body_bytes)
            if not self._is_webhook_path():
                raise Rejected(404, "not found")
            status, message = receiver.receive(self.headers.get("Authorization"), body)
        except Rejected as refusal:
            logger.warning(
                "refused %s %s: %s (%d)", self.command, loggable(self.path), loggable(refusal.reason), refusal.status
            )
            status, message = refusal.status, refusal.reason
        self._answer(status, message)

    def _refuse_method(self) -> None:
        self.request_received()  # no body to read
        if not self._is_webhook_path():
            self._answer(404, "not found")
        else:
            self._answer(405, "only POST", {"Allow": "POST"})

    do_GET = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _refuse_method

    def __getattr__(self, name: str) -> Any:
        # Any other method (HEAD, TRACE, CONNECT, one nobody defined) is refused alike: the base
        # class answers a method it has no do_ for with 501 and an HTML page.
        if name.startswith("do_"):
            return self._refuse_method
        raise AttributeError(name)

    def _is_webhook_path(self) -> bool:
        # The path itself, a query string aside; not taken apart as a URL (an absolute form
        # would name a host, and a malformed one would raise).
        return self.path.partition("?")[0] == WEBHOOK_PATH

    def _read_body(self, limit: int) -> bytes:
        try:
            length = declared_length(self.headers, limit)
            body = self.rfile.read(length)
        finally:
            self.request_received()
        if len(body) < length:
            raise Rejected(400, "the body is shorter than its Content-Length")
        return body

    def _answer(self, status: int, message: str, headers: dict | None = None) -> None:
        data = (message + "\n").encode()
        self.send_response(status)
        for name, value in {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":  # a HEAD answer has the headers of the body it does not send
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # the request line only, never headers
        logger.debug("%s %s", self.address_string(), loggable(format % args))

    def log_error(self, format: str, *args: Any) -> None:  # malformed requests, timeouts
        logger.warning("%s %s", self.address_string(), loggable(format % args))

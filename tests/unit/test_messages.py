"""Messages quote names and values from landing zones and data, which are anyone's text: shown
with their control characters escaped, they cannot drive a terminal or forge a log line."""

from dbt.adapters.openmirror.errors import LandingZoneServiceError, PublishError
from dbt.adapters.openmirror.run import model_warnings

HOSTILE = "t\x1b[2J\x1b]0;title\x07\nforged line\u202e"
SHOWN = "t\\x1b[2J\\x1b]0;title\\x07\\nforged line\\u202e"


def test_errors_show_control_characters_escaped():
    assert PublishError(f"Model 'm': {HOSTILE} and café").msg == f"Model 'm': {SHOWN} and café"
    assert LandingZoneServiceError(HOSTILE, status_code=409).msg == SHOWN


def test_warnings_show_control_characters_escaped(monkeypatch):
    fired = []
    monkeypatch.setattr(model_warnings, "warn_or_error", fired.append)
    model_warnings.warn(f"Model 'm': {HOSTILE}")
    assert [event.base_msg for event in fired] == [f"Model 'm': {SHOWN}"]

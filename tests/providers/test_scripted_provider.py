"""The Scripted provider on its own: pacing, validation and cancellation."""

import threading

import pytest

from kward.cancel import CancelToken
from kward.errors import Canceled
from kward.providers.base import ModelRequest
from kward.providers.scripted import ScriptedProvider, ScriptError, validate_script
from lib.fake_sink import RecordingSink
from lib.scripts import text
from lib.session_records import typed


def request():
    return ModelRequest(instructions="", messages=[typed({"role": "user", "content": "go"})], tools=[], model="m")


def test_interval_paces_repeated_deltas():
    provider = ScriptedProvider(validate_script([[text("x", repeat=5, interval=0.02)]]))
    sink = RecordingSink()
    response = provider.complete(request(), sink, CancelToken())
    assert response.text == "xxxxx"
    gaps = [b - a for a, b in zip(sink.text_times, sink.text_times[1:])]
    assert len(gaps) == 4 and min(gaps) >= 0.019


def test_cancel_interrupts_a_paced_stream():
    provider = ScriptedProvider(validate_script([[text("x", repeat=1000, interval=10)]]))
    sink, cancel = RecordingSink(), CancelToken()
    errors = []

    def run():
        try:
            provider.complete(request(), sink, cancel)
        except Canceled as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    assert sink.first_text.wait(5)
    cancel.cancel()
    t.join(2)
    assert not t.is_alive() and len(errors) == 1 and len(sink.texts) == 1


@pytest.mark.parametrize("bad", [{"interval": -1}, {"interval": "fast"}, {"repeat": 0}])
def test_bad_pacing_fields_are_refused_at_load(bad):
    with pytest.raises(ScriptError) as info:
        validate_script([[{"type": "text", "text": "x", **bad}]])
    assert next(iter(bad)) in info.value.message

"""The proxy's relay cuts an upstream stream only at the ends of events, whatever its line ends and however it arrives."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sfqtui.proxy.errors import EventTooLong
from sfqtui.proxy.sse import WholeEvents, data_of, events_of

LINE_ENDS = st.sampled_from([b"\n", b"\r\n", b"\r"])
FIELD = st.sampled_from([b"data: {\"a\": 1}", b"data:x", b"id: 7", b"event: message", b": comment", b"data: "])


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[bytes], list[int]]:
    """Events (field lines, then an empty line, each line ended its own way) and where the stream is cut."""
    events = []
    for _ in range(draw(st.integers(1, 6))):
        lines = draw(st.lists(FIELD, min_size=1, max_size=3))
        events.append(b"".join(line + draw(LINE_ENDS) for line in lines) + draw(LINE_ENDS))
    size = sum(map(len, events))
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, size - 1)), max_size=8))))
    return events, cuts


@given(streams())
def test_pieces_are_whole_events_and_lose_nothing(stream: tuple[list[bytes], list[int]]) -> None:
    events, cuts = stream
    raw = b"".join(events)
    whole = WholeEvents()
    pieces = [whole.feed(raw[a:b]) for a, b in zip([0, *cuts], [*cuts, len(raw)])]
    assert b"".join(pieces) + whole.rest() == raw
    # Every piece ends where an event ends.
    ends = {sum(map(len, events[:k])) for k in range(len(events) + 1)}
    position = 0
    for piece in pieces:
        position += len(piece)
        assert position in ends


def test_a_whole_chunk_passes_as_it_is() -> None:
    whole = WholeEvents()
    chunk = b"data: one\n\ndata: two\n\n"
    assert whole.feed(chunk) is chunk


def test_a_carriage_return_at_the_end_waits_for_what_follows() -> None:
    whole = WholeEvents()
    assert whole.feed(b"data: x\r\n\r") == b""
    assert whole.feed(b"\ndata: y\r\n\r\n") == b"data: x\r\n\r\ndata: y\r\n\r\n"


def test_events_and_their_data() -> None:
    events = events_of(b"id: 1\r\ndata: {\"a\":\r\ndata:1}\r\n\r\n: ping\n\n")
    assert events == [[b"id: 1\r\n", b"data: {\"a\":\r\n", b"data:1}\r\n", b"\r\n"], [b": ping\n", b"\n"]]
    assert data_of(events[0]) == '{"a":\n1}'
    assert data_of(events[1]) == ""


def test_a_long_event_in_many_pieces_is_cut_once_whole_and_an_endless_one_is_refused() -> None:
    whole = WholeEvents(limit=10_000)
    pieces = [b"data: "] + [b"x" * 100] * 50 + [b"\n", b"\n"]
    out = [whole.feed(p) for p in pieces]
    assert out[:-1] == [b""] * (len(pieces) - 1) and out[-1] == b"".join(pieces)
    with pytest.raises(EventTooLong):
        for _ in range(200):
            whole.feed(b"data: " + b"y" * 100)

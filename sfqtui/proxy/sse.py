"""Server-Sent Events as the proxy writes and relays them (the WHATWG format: field lines, then an empty line)."""

from __future__ import annotations

from sfqtui.proxy.errors import EventTooLong

KEEPALIVE = b": keepalive\n\n"
# A line ends in \n, \r\n or \r; an event ends at an empty line.
EMPTY_LINES = (b"\n", b"\r\n", b"\r")


def frame(data: str, id: int | str | None = None, event: str | None = None) -> bytes:
    """One event; each line of ``data`` gets its own ``data:`` field (compact JSON has one)."""
    head = ""
    if event:
        head += f"event: {event}\n"
    if id is not None and id != "":
        head += f"id: {id}\n"
    if "\n" in data:
        return (head + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n").encode()
    return f"{head}data: {data}\n\n".encode()


def events_of(block: bytes) -> list[list[bytes]]:
    """The events of whole events' bytes, each as its lines (with their line ends, the empty line last)."""
    events: list[list[bytes]] = [[]]
    for line in block.splitlines(keepends=True):
        events[-1].append(line)
        if line in EMPTY_LINES:
            events.append([])
    return [event for event in events if event]


def data_of(event: list[bytes]) -> str:
    """An event's data: its ``data:`` values (one leading space dropped), joined by newlines."""
    values = [line[5:].rstrip(b"\r\n") for line in event if line.startswith(b"data:")]
    return "\n".join((v[1:] if v.startswith(b" ") else v).decode() for v in values)


class WholeEvents:
    """Cuts a stream's bytes, as they arrive, at the end of its last whole event, so that
    events can be passed on byte for byte without ever splitting one. The bytes of an
    unfinished event are looked at once, however many pieces it comes in."""

    def __init__(self, limit: int = 16 << 20) -> None:
        self.limit = limit
        self._pending = b""
        self._scanned = 0  # the start of the first line of _pending not yet seen whole

    def feed(self, data: bytes) -> bytes:
        """The whole events that ``data`` completes (b"" if none); the rest waits for more."""
        block = self._pending + data if self._pending else data
        # Nearly always: a chunk from the upstream is one or more whole events.
        if block.endswith((b"\n\n", b"\r\n\r\n")):
            self._pending, self._scanned = b"", 0
            return block
        if b"\n" not in data and b"\r" not in data:
            lines = []  # no line ends here: the same unfinished line
        else:
            lines = block[self._scanned:].splitlines(keepends=True)
        if lines and (block.endswith(b"\r") or not lines[-1].endswith((b"\n", b"\r"))):
            lines.pop()  # unfinished, or it may be the first half of \r\n
        end, position = 0, self._scanned
        for line in lines:
            position += len(line)
            if line in EMPTY_LINES:
                end = position
        self._pending, self._scanned = block[end:], position - end
        if len(self._pending) > self.limit:
            raise EventTooLong(f"an event longer than {self.limit:,} bytes")
        return block[:end]

    def rest(self) -> bytes:
        """What is left when the stream ends: an event that never finished."""
        rest, self._pending, self._scanned = self._pending, b"", 0
        return rest

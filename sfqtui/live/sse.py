"""Server-Sent Events frames as the proxy writes them (the WHATWG format: field lines, then a blank line)."""

from __future__ import annotations

KEEPALIVE = b": keepalive\n\n"


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

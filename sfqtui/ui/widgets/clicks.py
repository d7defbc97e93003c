"""What a click on one of the dashboard's views says, for the app to act on: an event
row (the cursor goes there) or a user (the log shows only that user's events)."""

from __future__ import annotations

from textual.message import Message
from textual.widget import Widget


class EventClicked(Message):
    """A row of an event log was clicked: it shows event ``k``; ``user``: the name, if the
    click fell on the row's user."""

    def __init__(self, view: Widget, k: int, user: str | None) -> None:
        super().__init__()
        self.view, self.k, self.user = view, k, user


class UserClicked(Message):
    """A user's row or name was clicked (the meter band, the shares table)."""

    def __init__(self, view: Widget, user: str) -> None:
        super().__init__()
        self.view, self.user = view, user

"""Every app's notifications are kept for the test (dashboard.notifications reads them): a toast
lasts 3 to 5 s, which a busy machine can spend between a key and the test's look at it."""

from collections.abc import Iterator

import pytest
from textual.app import App
from textual.notifications import Notify

from dashboard import KEPT


@pytest.fixture(autouse=True)
def kept_notifications(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    shown = App._on_notify

    def keeping(app: App, event: Notify) -> None:
        app.__dict__.setdefault(KEPT, []).append(event.notification)
        shown(app, event)

    monkeypatch.setattr(App, "_on_notify", keeping)
    yield

"""The keys that choose what the logs list and find in them: `f` (and a click on a user)
lists one user's events, `/` searches request ids and users, `N` and `P` step between
the matches. The app holds one ``LogKeys``; what they need of it is ``LogKeysHost``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widget import Widget

from sfqtui.runs.run import Run
from sfqtui.ui.frame import ViewOptions
from sfqtui.ui.panes.event_log import EventLog
from sfqtui.ui.panes.search import LogSearch, closest_users
from sfqtui.ui.widgets.ask import Ask

LOG_MOUSE = "click: go to a row · a name: only that user"


class LogKeysHost(Protocol):
    options: ViewOptions

    @property
    def current(self) -> Run: ...

    def leading_log(self) -> EventLog: ...

    def logs(self) -> list[EventLog]: ...

    def moved(self, k: int | None, nothing: str) -> None: ...

    def use_options(self, options: ViewOptions) -> None: ...

    def refresh_views(self) -> None: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None) -> None: ...

    def push_screen(self, screen: Screen[str | None], callback: Callable[[str | None], None]) -> object: ...


class LogKeys:
    def __init__(self, host: LogKeysHost) -> None:
        self._host = host
        self.search = LogSearch()

    def current_user(self) -> str:
        run = self._host.current
        k = run.cursor.k
        return (run.table.user_name(k) or "") if k >= 0 else ""

    def listed(self) -> str:
        """What the logs list, in words."""
        return self._host.options.log_description or "all events"

    def ask_filter(self) -> None:
        """Like the search, the prompt opens empty (the filter in force shows in it, greyed): Enter on it shows everyone."""
        def go(answer: str | None) -> None:
            if answer is not None:
                self.filter(answer.strip() or None)

        now = f"now: {self._host.options.user_filter or 'everyone'}"
        self._host.push_screen(Ask("Show the events of user (empty: everyone):", "", self._host.current.table.users, now), go)

    def filter(self, user: str | None) -> None:
        """List only ``user``'s events in every log (None: everyone's). A user who is not in
        the log leaves the filter as it was, and the closest names are offered."""
        host = self._host
        table = host.current.table
        if user is not None and user not in table.user_code:
            closest = closest_users(table, user)
            offer = f"; did you mean {' or '.join(closest)}?" if closest else ""
            host.notify(f"no user {user!r} in this log{offer} The log still shows {self.listed()}.", title="filter unchanged",
                        severity="warning", timeout=8)
            return
        host.use_options(replace(host.options, user_filter=user))

    def user_clicked(self, user: str) -> None:
        """A click on a user shows only that user's events; on the same user again, everyone's."""
        self.filter(None if self._host.options.user_filter == user else user)

    def ask_search(self) -> None:
        def go(answer: str | None) -> None:
            if answer is None:
                return
            self.search.text = answer.strip()
            for log in self._host.logs():
                log.mark(self.search.text)
            if self.search.text:
                self.step(+1)
            else:
                self._say_found("")
                self._host.refresh_views()

        now = f"now: {self.search.text}" if self.search.text else "no search now"
        self._host.push_screen(Ask("Search request ids and users (then N: next match, P: previous; empty: no search):", "", None, now), go)

    def step(self, direction: int) -> None:
        host, text = self._host, self.search.text
        if not text:
            host.notify("no search yet: / searches request ids and users", timeout=3)
            return
        run = host.current
        found = self.search.step(run.table, host.leading_log().listed, run.cursor.k, direction)
        if found is None:
            self._say_found(f"/{text}: no match")
            host.notify(f"no request id or user in {self.listed()} contains {text!r}", timeout=4)
            host.refresh_views()
            return
        wrapped = (" (from the start)" if direction > 0 else " (from the end)") if found.wrapped else ""
        so_far = " so far" if run.loading else ""  # the events not loaded yet may hold more
        self._say_found(f"/{text}: match {found.position:,} of {found.count:,}{so_far}{wrapped} · N next, P previous")
        host.moved(run.cursor.at_event(found.k), "")

    def _say_found(self, said: str) -> None:
        """Where a search stands, on the border under the leading log (its mouse keys when no search is on)."""
        box = self._host.leading_log().parent
        if isinstance(box, Widget):
            box.border_subtitle = said or (LOG_MOUSE if box.id == "log-box" else "")

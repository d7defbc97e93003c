"""What the command palette and the export dialogs need from the dashboard: typed against
this, they never import the app (which lists them in its palette)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ClassVar, Protocol

from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker

from sfqtui.runs.protocols import RunOpening
from sfqtui.runs.run import Run
from sfqtui.ui.commands.reruns import Reruns
from sfqtui.ui.frame import Frame
from sfqtui.ui.panes.event_log import EventLog


class CommandHost(Protocol):
    BINDINGS: ClassVar[list[BindingType]]

    @property
    def runs(self) -> Sequence[Run]: ...

    @property
    def opening(self) -> RunOpening: ...

    def frame(self) -> Frame: ...

    def leading_log(self) -> EventLog: ...

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None: ...

    def get_key_display(self, binding: Binding) -> str: ...

    @property
    def reruns(self) -> Reruns: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None) -> None: ...

    def push_screen(self, screen: Screen[str | None], callback: Callable[[str | None], None]) -> object: ...

    def run_worker(self, work: Callable[[], None] | Coroutine[Any, Any, None], *, group: str = "default", description: str = "",
                   exit_on_error: bool = True, thread: bool = False) -> Worker[None]: ...

    def save_screenshot(self, filename: str | None = None, path: str | None = None) -> str: ...

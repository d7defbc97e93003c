"""A one-line prompt (go to, filter by user, run until a user's dispatch)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label


class Ask(ModalScreen[str | None]):
    DEFAULT_CSS = """
    Ask { align: center middle; }
    Ask > Vertical { width: 70; height: auto; border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [("escape", "cancel", "Cancel")]

    def __init__(self, question: str, value: str = "", suggestions: list[str] | None = None) -> None:
        super().__init__()
        self._question = question
        self._value = value
        self._suggestions = suggestions or []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._question)
            yield Input(value=self._value, suggester=SuggestFromList(self._suggestions, case_sensitive=True) if self._suggestions else None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)

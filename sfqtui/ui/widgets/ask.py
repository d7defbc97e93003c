"""A one-line prompt (go to, filter by user, search, run until a user's dispatch).

The question wraps rather than being cut: the box is narrower than most questions at any
terminal width. ``placeholder`` says, in an empty prompt, what is in force now."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label


class Ask(ModalScreen[str | None]):
    DEFAULT_CSS = """
    Ask { align: center middle; }
    Ask > Vertical { width: 70; max-width: 100%; height: auto; border: round $accent; background: $surface; padding: 0 1; }
    Ask Label { width: 100%; }
    """
    BINDINGS = [("escape", "cancel", "Cancel")]

    def __init__(self, question: str, value: str = "", suggestions: list[str] | None = None, placeholder: str = "") -> None:
        super().__init__()
        self._question = question
        self._value = value
        self._suggestions = suggestions or []
        self._placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._question)
            suggester = SuggestFromList(self._suggestions, case_sensitive=True) if self._suggestions else None
            yield Input(value=self._value, placeholder=self._placeholder, suggester=suggester)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)

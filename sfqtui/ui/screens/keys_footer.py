"""The footer's keys, laid out again only when the keys it would list have changed.

Textual's Footer builds all its keys anew each time the screen says its bindings may have
changed: the dashboard's start-up says so three times, each time for the same keys, and
every key is styled three times as it mounts (a third of a start's work). This one waits until
the screen has settled (one rebuild for any number of signals in a row) and rebuilds only
if the keys it lists (their bindings, whether each is enabled, their tooltips) have changed.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

Shown = tuple[tuple[Binding, bool, str], ...]  # each key the footer lists: its binding, whether enabled, its tooltip


class KeysFooter(Footer):
    def __init__(self) -> None:
        super().__init__()
        self._listed: Shown | None = None  # what the last build listed (None: nothing built yet)
        self._rebuild_due = False

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._rebuild_due:
            self._rebuild_due = True
            self.call_after_refresh(self._rebuild_if_changed)

    def _shown(self) -> Shown:
        palette = self.app.COMMAND_PALETTE_BINDING
        return tuple((binding, enabled, tooltip) for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
                     if binding.show or key == palette)

    async def _rebuild_if_changed(self) -> None:
        self._rebuild_due = False
        shown = self._shown()
        if shown != self._listed:
            self._listed = shown
            await self.recompose()

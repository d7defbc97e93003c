"""The `?` panel: what every key does now, read from the bindings in force, grouped; and the mouse.

Textual's own help panel lists the active bindings as they come, the focused view's
first, so a view's scroll keys would sit on top (and used to hide the app's step keys).
This one reads the same active bindings, puts the app's under the headings below by
their action, the focused view's and the screen's under their own, and adds the mouse,
which no binding describes. A key whose action has no heading here is still listed,
under "Other", so a new binding is never missing from the help.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import HelpPanel, Markdown, Static

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Move", ("step", "next_dispatch", "previous_dispatch", "home", "end", "goto", "until_user")),
    ("Find", ("search", "next_match", "previous_match", "next_idle_reset", "next_violation")),
    ("Play", ("toggle_play", "faster", "slower")),
    ("Show", ("toggle_dispatches", "filter_user", "cycle_sort", "toggle_folded", "toggle_lockstep", "cycle_replica", "calibration",
              "earlier_proxy_run")),
    ("App", ("command_palette", "toggle_help", "lesson_menu", "quit")),
)
MOUSE = (
    ("click a row", "go to its event (event log)"),
    ("click a user", "only that user's events (meters, shares, a name in the log); again: everyone"),
    ("wheel", "scroll the view under the pointer"),
)
_GROUP_OF = {action: title for title, actions in GROUPS for action in actions}


def key_groups(app: App[Any], focused: Widget | None) -> dict[str, list[tuple[str, Text]]]:
    """(keys, description) per heading, from the bindings active on the app's screen now."""
    rows: dict[tuple[str, str], tuple[list[str], Binding]] = {}
    for active in app.screen.active_bindings.values():
        binding, namespace = active.binding, active.node
        if binding.system or not binding.description:
            continue
        if namespace is app:
            title = _GROUP_OF.get(binding.action.partition("(")[0], "Other")
        elif namespace is focused:
            title = f"This view ({_view_name(focused)})"
        else:
            title = "Focus and copy"
        keys, described = rows.setdefault((title, binding.action), ([], binding))
        if described.tooltip and not binding.tooltip:  # the app's own words over Textual's default ones
            rows[(title, binding.action)] = (keys, binding)
        if (shown := app.get_key_display(binding)) not in keys:
            keys.append(shown)
    groups: dict[str, list[tuple[str, Text]]] = {title: [] for title, _ in GROUPS}
    for (title, _action), (keys, binding) in rows.items():
        groups.setdefault(title, []).append((" ".join(keys), Text.assemble(binding.description, (f" {binding.tooltip}" if binding.tooltip else "", "dim"))))
    return {title: found for title, found in groups.items() if found}


def _view_name(widget: Widget) -> str:
    """What the dashboard calls a view: the title on its border or its box's."""
    for node in widget.ancestors_with_self:
        if isinstance(node, Widget) and node.border_title:
            return str(node.border_title)
    return type(widget).__name__


class KeysTable(Static):
    DEFAULT_CSS = "KeysTable { width: 1fr; height: auto; }"

    def show(self, focused: Widget | None) -> None:
        table = Table(box=box.SIMPLE_HEAD, show_header=False, padding=(0, 1), expand=True)
        table.add_column(justify="right", style="bold", no_wrap=True)
        table.add_column(ratio=1)
        mouse = [(what, Text(does)) for what, does in MOUSE]
        for title, rows in [*key_groups(self.app, focused).items(), ("Mouse", mouse)]:
            table.add_row("", Text(title, "bold underline"))
            for keys, description in rows:
                table.add_row(Text(keys, "bold"), description)
        self.update(table)


class KeysHelp(HelpPanel):
    """Textual's help panel (the focused view's own help on top), with the keys grouped."""

    DEFAULT_CSS = "KeysHelp VerticalScroll#keys-help { height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield Markdown(id="widget-help")
        with VerticalScroll(id="keys-help"):
            yield KeysTable()

    def on_mount(self) -> None:
        self.query_one(KeysTable).show(self.screen.focused)

    def update_help(self, focused_widget: Widget | None) -> None:
        super().update_help(focused_widget)
        self.query_one(KeysTable).show(focused_widget)

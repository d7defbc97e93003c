"""A lesson in the dashboard: the menu of the article's cases, and the panel above the panes
that introduces the lesson and, once the replay reaches its end, gives the measured outcome."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from sfqtui.scenarios.lessons import LESSONS, Lesson
from sfqtui.ui.widgets.text_view import TextView


class LessonPanel(TextView):
    # The introduction keeps to its box while the panes step; the outcome, at the end, shows whole
    # (with the commands that print the same figures last), up to half the screen.
    DEFAULT_CSS = """
    LessonPanel { height: 9; padding: 0 1; border: round $accent 50%; border-title-color: $text; }
    LessonPanel.-outcome { height: auto; max-height: 50%; }
    """

    def __init__(self, lesson: Lesson, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.lesson = lesson
        self.outcome: list[str] | None = None
        self.border_title = f"lesson {lesson.section}: {lesson.title}"

    def show(self, at_end: bool) -> None:
        outcome = self.outcome if at_end else None
        if (outcome is not None) != self.has_class("-outcome"):  # the other text: its own box and scroll range
            self.set_class(outcome is not None, "-outcome")
            self.reset_extent()
        if outcome is not None:
            self.set_text([Text("The outcome, measured on this trace:", "bold"), *(Text(line) for line in outcome)])
        else:
            watch = Text(self.lesson.introduction)
            hint = Text(f"→ steps all panes by {self.lesson.lockstep} (l switches), space plays; the outcome shows at the end (end key); "
                        "escape: back to the lessons", "dim")
            self.set_text([watch, hint])


class LessonMenu(App[str]):
    """Pick a lesson; the app returns its name (nothing when quit). ``current``: the lesson
    the learner comes back from, highlighted."""

    TITLE = "sfqtui teach"
    BINDINGS = [Binding("q,escape", "quit", "Quit")]
    CSS = "Static { padding: 1 2; } OptionList { height: 1fr; margin: 0 2; }"

    def __init__(self, current: str | None = None) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        yield Static("The article's cases, each a scenario stepped under two schedulers side by side. Enter opens one.")
        options = [Option(Text.assemble((f"{lesson.section}  ", "dim"), (lesson.title, "bold"), f"  ({' | '.join(lesson.schedulers)})\n",
                                        (lesson.introduction, "dim")), id=name) for name, lesson in LESSONS.items()]
        yield OptionList(*options)
        yield Footer()

    def on_mount(self) -> None:
        if self.current in LESSONS:
            self.query_one(OptionList).highlighted = list(LESSONS).index(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.exit(event.option.id)

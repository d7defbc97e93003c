"""A one-line text of parts that fits its width by shortening or leaving out whole parts.

The status line and the pane heads say many things in one line; a narrow screen used to
cut the line with an ellipsis, mid-number (``v=14,889…``). Here each part is shown whole
or not at all: when the line is too wide, the part of the lowest rank gives way first,
by its next shorter form (``waiting 1,601`` -> ``wait 1,601``) and then altogether.
Parts without a rank are always shown (what the line is about: the scheduler, the event).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from rich.text import Text

Form = str | Text


def text_key(text: Text) -> Hashable:
    """All that tells how a Text is drawn (Text's own ``==`` leaves out its style and how it wraps)."""
    return text.plain, text.style, tuple(text.spans), text.no_wrap, text.overflow, text.justify


@dataclass(frozen=True)
class Part:
    """One part of a line: its forms, longest first, and its rank (None: always shown)."""

    forms: tuple[Text, ...]
    rank: int | None = None


def part(rank: int | None, *forms: Form) -> Part:
    """A part of ``rank`` (None: always shown) from its forms, longest first."""
    return Part(tuple(Text(form) if isinstance(form, str) else form for form in forms), rank)


def always(form: Form) -> Part:
    """A part that is always shown."""
    return part(None, form)


class FittedLine:
    """A line of parts that a view lays out at the width it has (``at``)."""

    def __init__(self, parts: Sequence[Part]) -> None:
        self.parts = [p for p in parts if p.forms and p.forms[0].cell_len]

    @property
    def key(self) -> Hashable:
        """Equal for two lines of the same parts: they are laid out alike at any width."""
        return tuple((p.rank, *map(text_key, p.forms)) for p in self.parts)

    def at(self, width: int) -> Text:
        """The line at ``width`` cells: lowest ranks shortened, then left out, until it fits."""
        chosen = [0] * len(self.parts)  # each part's form; len(forms): left out
        lengths = [[form.cell_len for form in p.forms] + [0] for p in self.parts]
        total = sum(lengths[i][0] for i in range(len(self.parts)))
        while total > width:
            shrinkable = [i for i, p in enumerate(self.parts) if p.rank is not None and chosen[i] < len(p.forms)]
            if not shrinkable:
                break
            i = min(shrinkable, key=lambda i: (self.parts[i].rank, -i))  # the lowest rank; of equal ranks, the rightmost
            total -= lengths[i][chosen[i]] - lengths[i][chosen[i] + 1]
            chosen[i] += 1
        line = Text(no_wrap=True, overflow="crop")
        for p, c in zip(self.parts, chosen):
            if c < len(p.forms):
                line.append_text(p.forms[c])
        return line

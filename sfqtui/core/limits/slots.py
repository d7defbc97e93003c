"""``--slots`` as ``sfqtui proxy``, a replay and a run spec take it, and the pace at which limits read their engines."""

from __future__ import annotations

from sfqtui.core.limits.settings import LimitSettings
from sfqtui.errors import InputError

# Every 50 ms the proxy reads each upstream's metrics, and a replay on the engine model its
# engines (at t = k x SCRAPE_S): an engine step is 10 to 50 ms, and a request a second or
# more, so the limit follows within a few steps; a scrape costs the engine one render of a
# few dozen series (vLLM, the emulator: well under a millisecond).
SCRAPE_S = 0.05
# A request counts as held outside its engine (EngineSignals.held) once it has been in flight
# this long when a reading starts: a younger one may still be on its way there (the HTTP hop,
# a busy host), and one that stays outside less long makes no queue worth cutting for.
HELD_AFTER_S = 0.2


def parse_slots(text: str, option: str = "--slots") -> tuple[int | None, LimitSettings | None]:
    """A count of slots (fixed), or ``auto`` / ``auto:MAX`` (limits that follow each upstream or
    engine, at most MAX each): (count, None) or (None, the controller's settings)."""
    given = text.strip()
    if given.lower() == "auto" or given.lower().startswith("auto:"):
        _, colon, maximum = given.partition(":")
        if not colon:
            return None, LimitSettings()
        if not maximum.strip().isdigit():
            raise InputError(f"{option} {text!r}: expected auto or auto:MAX with MAX a whole number of at least 1 (the most slots one upstream gets)")
        if int(maximum) < 1:
            raise InputError(f"{option} {text!r}: the maximum must be at least 1")
        return None, LimitSettings(maximum=int(maximum))
    if not given.lstrip("-").isdigit():
        raise InputError(f"{option} {text!r}: expected a whole number of at least 1, auto or auto:MAX")
    if int(given) < 1:
        raise InputError(f"{option} must be >= 1")
    return int(given), None

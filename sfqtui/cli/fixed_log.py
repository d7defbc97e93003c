"""A saved event log is fixed: the options that would replay it otherwise are refused, not ignored."""

from pathlib import Path

import typer

from sfqtui.errors import InputError
from sfqtui.trace.write import read_metadata


def _given(ctx: typer.Context, ignored: tuple[str, ...]) -> list[str]:
    """The options given on the command line (or by environment), by their long names."""
    given = []
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name) if param.name else None
        if param.name not in ignored and source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            given.append(next((o for o in param.opts if o.startswith("--")), param.opts[0]))
    return given


def refuse_trace_options(ctx: typer.Context, log: Path, allowed: tuple[str, ...]) -> None:
    """Refuse every option given but the command's parameters named in `allowed`."""
    given = _given(ctx, allowed)
    if given:
        trace = read_metadata(log).get("trace")
        made_from = f" ({trace})" if isinstance(trace, str) else ""
        raise InputError(f"{log} is an event log, fixed when it was written: {', '.join(given)} "
                         f"{'applies' if len(given) == 1 else 'apply'} to a trace; replay the trace it was made from{made_from} with them")

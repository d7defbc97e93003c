"""`sfqtui gen`: write a synthetic scenario trace."""

from pathlib import Path
from typing import Annotated

import polars as pl
import typer

from sfqtui.cli.errors import fail, refuses_bad_input
from sfqtui.core.numbers import counted
from sfqtui.core.pricing.service import TokenServiceModel
from sfqtui.paths import check_output
from sfqtui.scenarios import SCENARIOS, generate
from sfqtui.trace.offered_load import service_seconds
from sfqtui.trace.write import write_trace

_LIST = "\n\n".join(f"**{s.name}** ({s.section}): {s.summary}" for s in SCENARIOS.values())


@refuses_bad_input
def gen(
    scenario: Annotated[str, typer.Argument(help="Scenario name (see the list above).", show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Parquet file to write.")],
    seed: Annotated[int, typer.Option(help="Random seed; the same seed always gives the same file.")] = 0,
    users: Annotated[int | None, typer.Option(help="Number of users, where the scenario has a choice.")] = None,
    requests: Annotated[int | None, typer.Option(help="Number of requests (about), where the scenario has a choice.")] = None,
    with_cost: Annotated[
        bool,
        typer.Option("--with-cost", help="Add explicit cost (input + 2 x output tokens) and service_s columns to token traces."),
    ] = False,
) -> None:
    if scenario not in SCENARIOS:
        raise fail(f"unknown scenario {scenario!r}; choose one of {', '.join(SCENARIOS)}")
    for name, value in (("--users", users), ("--requests", requests)):
        if value is not None and value < 1:
            raise fail(f"{name} must be >= 1")
    check_output(output)
    frame = generate(scenario, seed=seed, users=users, requests=requests)
    if with_cost and "cost" not in frame.columns and "output_tokens" in frame.columns:
        frame = frame.with_columns(
            cost=(pl.col("input_tokens") + 2 * pl.col("output_tokens")).cast(pl.Float64),
            service_s=service_seconds(TokenServiceModel(), frame.columns),
        )
    info = SCENARIOS[scenario]
    blocks = {} if info.block_tokens is None else {"block_tokens": info.block_tokens}
    write_trace(frame, output, {"scenario": scenario, "seed": seed, "slots": info.slots, "section": info.section, **blocks})
    users_seen = frame["user"].n_unique()
    typer.echo(f"wrote {output}: {counted(frame.height, 'request')} from {counted(users_seen, 'user')} "
               f"({scenario}, seed {seed}; made for --slots {info.slots})")


GEN_HELP = f"""Write a synthetic trace for one of the article's scenarios.

Each scenario records the slot count it was made for; simulate, compare and replay use
it when --slots is not given.

{_LIST}
"""

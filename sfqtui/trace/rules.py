"""The rules of semantics §1 a trace's columns must keep, as polars masks of the rows that break them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import polars as pl

from sfqtui.trace.blocks import block_rules
from sfqtui.trace.schema import CACHED, ENGINE_START, PREDICTED_CACHED, PREFIX_BLOCKS, TOKEN_COLUMNS


class Rule(NamedTuple):
    """A rule of semantics §1 and the rows that break it. A ``whole`` rule's mask needs the
    whole column at once; it is tested another way while the file streams past."""

    column: str
    mask: pl.Expr
    text: str
    whole: bool = False


FIRST_WEIGHT = "__first_weight"  # per row, the weight on its user's first row in the file


def rules_for(schema: Mapping[str, pl.DataType], block_tokens: int | None = None) -> list[Rule]:
    """The rules that apply to a file with this schema (and, with prefix_blocks, its
    ``block_tokens``), in the order they are reported."""
    has_cost = "cost" in schema
    rules: list[Rule] = []
    for column in ("request_id", "user"):
        rules.append(Rule(column, pl.col(column).is_null(), f"{column} is required on every row"))
    ids = pl.col("request_id")
    rules.append(Rule("request_id", ids.is_duplicated() & ~ids.is_first_distinct(),
                      "request_id must be unique (this id appeared earlier)", whole=True))
    arrival = pl.col("arrival_s").cast(pl.Float64)
    rules += [
        Rule("arrival_s", arrival.is_null(), "arrival_s is required on every row"),
        Rule("arrival_s", arrival.is_nan() | arrival.is_infinite(), "arrival_s must be finite"),
        Rule("arrival_s", arrival < 0, "arrival_s must be >= 0"),
    ]
    for column in (*TOKEN_COLUMNS, PREDICTED_CACHED, CACHED):  # the last two: a recording's, read for a replay as it ran
        if column not in schema:
            continue
        values = pl.col(column)
        if schema[column].is_float():
            rules.append(Rule(column, values.is_nan() | values.is_infinite(), f"{column} must be a finite whole number"))
            rules.append(Rule(column, values != values.floor(), f"{column} must be a whole number of tokens"))
        if column == "input_tokens" and not has_cost:
            rules.append(Rule(column, values.is_null(), "input_tokens is required on every row when there is no cost column"))
        if column == "max_tokens":
            rules.append(Rule(column, values <= 0, "max_tokens must be > 0"))
        else:
            rules.append(Rule(column, values < 0, f"{column} must be >= 0"))
    for column, rule in (("cost", "cost must be > 0"), ("service_s", "service_s must be > 0"), ("weight", "weight must be > 0")):
        if column not in schema:
            continue
        values = pl.col(column).cast(pl.Float64)
        rules += [
            Rule(column, values.is_null(), f"{column} must be given on every row when the column is present"),
            Rule(column, values.is_nan() | values.is_infinite(), f"{column} must be finite"),
            Rule(column, values <= 0, rule),
        ]
    if "priority" in schema and schema["priority"].is_float():
        values = pl.col("priority")
        rules.append(Rule("priority", values.is_nan() | values.is_infinite() | (values != values.floor()) | (values.abs() >= 2.0**63),
                          "priority must be an integer (int64)"))
    if "deadline_s" in schema:
        values = pl.col("deadline_s").cast(pl.Float64)
        rules += [
            Rule("deadline_s", values.is_nan() | values.is_infinite(), "deadline_s must be finite (leave it null for no deadline)"),
            Rule("deadline_s", values <= 0, "deadline_s must be > 0 seconds after arrival (leave it null for no deadline)"),
        ]
    if ENGINE_START in schema:
        values = pl.col(ENGINE_START).cast(pl.Float64)
        rules.append(Rule(ENGINE_START, values.is_nan() | values.is_infinite(),
                          "engine_start_s must be a finite time (leave it null where the engine did not say)"))
    if "weight" in schema:
        rules.append(Rule("weight", pl.col("weight").cast(pl.Float64) != pl.col(FIRST_WEIGHT),
                          "a user's weight must be the same on all of its rows"))
    if block_tokens is not None:
        rules += [Rule(PREFIX_BLOCKS, mask, text) for mask, text in block_rules(block_tokens)]
    return rules

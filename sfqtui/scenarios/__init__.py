"""Synthetic traces that each show one property of the article (`sfqtui gen`)."""

from sfqtui.scenarios.catalogue import SCENARIOS, Scenario, generate

__all__ = ["SCENARIOS", "Scenario", "generate"]

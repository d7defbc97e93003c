"""Where requests were placed, per upstream, at any event (sfqtui/core/log/placements.py): what
the placement views show, rebuilt from the log's rows."""

from sfqtui.core.log.placements import Placements, UpstreamFigures, upstream_title


def test_each_upstream_s_figures_are_those_of_the_rows_up_to_the_event() -> None:
    p = Placements()
    p.place(1, 0, "b:8000", 32)  # request 0 dispatched at event 1 to b, 32 tokens predicted there
    p.place(2, 1, "a:8000", 0)
    p.place(3, 0, "a:8000", None)  # its start row names an upstream again: placed once, where its dispatch said
    p.cached(5, 0, 48)  # what b's engine found for it, said at its completion
    p.finish(5, 0)
    p.place(7, 2, "b:8000", 16)
    assert p.at(0) == []
    assert p.at(4) == [UpstreamFigures("a:8000", 1, 1, 0, 0), UpstreamFigures("b:8000", 1, 1, 32, 0)]
    assert p.at(9) == [UpstreamFigures("a:8000", 1, 1, 0, 0), UpstreamFigures("b:8000", 2, 1, 48, 48)]
    assert (p.name_of(0), p.name_of(3), p.predicted_of) == ("b:8000", None, {0: 32, 1: 0, 2: 16})


def test_a_replay_s_engines_go_by_number_and_say_no_prediction() -> None:
    p = Placements()
    for k, engine in enumerate(("10", "2", "0")):
        p.place(k, k, engine, None)
    assert [f.name for f in p.at(5)] == ["0", "2", "10"] and not p.predicts and p.at(5)[0].predicted is None
    assert (upstream_title("2"), upstream_title("10.0.0.5:8000")) == ("engine 2", "10.0.0.5:8000")

"""The lessons of `sfqtui teach`: the article's cases as data, and their measured outcome.

Each lesson is a `gen` scenario opened under a main scheduler and the ones it is compared
with, side by side, stepped in lockstep by time or by dispatch number; each is a run spec
(sfqtui.core.replay.run_spec), so a pane can be several balancer replicas. Its
introduction says what to watch; ``outcome`` replays the scenario under each run and
measures what happened (shares, waits, worst gap; across replicas, the measures of
semantics §11), so the closing lines are never written by hand.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sfqtui.core.analysis.calibration import worst_gap_in_actual_cost
from sfqtui.core.analysis.fairness import FairnessReport, Gap, fairness_of_replay
from sfqtui.core.analysis.replication_cost import replica_measures, tally_replay
from sfqtui.core.log.lockstep import Mode
from sfqtui.core.log.rows import rows_from_replay
from sfqtui.core.numbers import Fixed, amount, count, percent, ratio
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.replay import Replay
from sfqtui.core.replay.run_spec import RunSpec
from sfqtui.core.requests.trace import Trace
from sfqtui.core.schedulers import traits
from sfqtui.scenarios.catalogue import SCENARIOS, generate
from sfqtui.trace.load import normalise, to_core
from sfqtui.trace.write import write_trace

TENTHS = Fixed(1)  # the outcome lines' seconds and multiples of c_max


@dataclass(frozen=True)
class Lesson:
    """One case of the article. ``main`` and ``compared`` are run specs (a scheduler, with
    replica settings after @). ``quantum`` is DRR's (None: the largest cost in the trace);
    ``in_actual_cost`` adds each scheduler's worst gap measured in actual cost (§10), for
    lessons about estimated against actual cost; ``first_dispatches`` counts each user's
    among the first N dispatches, for lessons across replicas; ``charges`` adds each user's
    charge under each run and who gains, for lessons about pricing the cached input."""

    name: str
    title: str
    section: str
    introduction: str
    scenario: str
    main: str
    compared: tuple[str, ...]
    slots: int
    lockstep: Mode
    seed: int = 0
    users: int | None = None
    requests: int | None = None
    quantum: float | None = None
    in_actual_cost: bool = False
    first_dispatches: int | None = None
    charges: bool = False

    @property
    def schedulers(self) -> tuple[str, ...]:
        """The run specs of its panes, the main one first."""
        return (self.main, *self.compared)

    @property
    def across_replicas(self) -> bool:
        """Some pane runs as several balancer replicas."""
        return any(self.config(spec).replicas.replicated for spec in self.schedulers)

    def frame(self) -> pl.DataFrame:
        return generate(self.scenario, seed=self.seed, users=self.users, requests=self.requests)

    def trace(self) -> Trace:
        return to_core(normalise(self.frame()), block_tokens=SCENARIOS[self.scenario].block_tokens)

    def write(self, path: Path) -> None:
        """The lesson's trace as a Parquet file, recording the slots it is meant for."""
        blocks = SCENARIOS[self.scenario].block_tokens
        write_trace(self.frame(), path, {"scenario": self.scenario, "seed": self.seed, "slots": self.slots,
                                         "section": self.section, "lesson": self.name, **({} if blocks is None else {"block_tokens": blocks})})

    def config(self, spec: str) -> ReplayConfig:
        """The replay of one of its run specs."""
        run = RunSpec.parse(spec)
        quantum = self.quantum if traits(run.scheduler).needs_quantum else None
        return run.config(ReplayConfig(scheduler=run.scheduler, slots=self.slots, quantum=quantum))

    @property
    def commands(self) -> list[str]:
        """The commands that write the lesson's trace and print the figures of its outcome
        (the first dispatches across replicas are the lesson's own count)."""
        trace = f"{self.scenario}.parquet"
        options = [f"--{name} {value}" for name, value in (("seed", self.seed or None), ("users", self.users), ("requests", self.requests))
                   if value is not None]
        gen = " ".join(["sfqtui gen", self.scenario, "-o", trace, *options])
        compare = f"sfqtui compare {trace} --slots {self.slots}"
        if not any(RunSpec.parse(spec).plain for spec in self.schedulers):  # each run its own command, with its options
            return [gen, *(f"{compare} --schedulers {RunSpec.parse(spec).scheduler}{_options(RunSpec.parse(spec))}" for spec in self.schedulers)]
        if not self.across_replicas:
            quantum = f" --quantum {amount(self.quantum)}" if self.quantum is not None else ""
            actual = [f"sfqtui calibrate {trace} --slots {self.slots}"] if self.in_actual_cost else []
            return [gen, f"{compare} --schedulers {','.join(self.schedulers)}{quantum}", *actual]
        replicated = []
        for spec in self.schedulers:
            config = self.config(spec)
            replicas = config.replicas
            if replicas.replicated:
                replicated.append(f"{compare} --schedulers {config.scheduler} --replicas {replicas.count} --router {replicas.router} "
                                  f"--share {replicas.share}")
            else:
                replicated.append(f"{compare} --schedulers {config.scheduler}")
        return [gen, *replicated]

    def outcome(self, trace: Trace) -> list[str]:
        """What happened under each run, measured on ``trace`` (the lesson's own), and the
        commands that print the same figures."""
        return [*self._figures(trace), f"the same figures: {'; '.join(self.commands)}"]

    def _figures(self, trace: Trace) -> list[str]:
        if self.across_replicas:
            return [line for spec in self.schedulers for line in _across_replicas(trace, self.config(spec), self.first_dispatches)]
        lines: list[str] = []
        reports: list[FairnessReport] = []
        for scheduler in self.schedulers:
            config = self.config(scheduler)
            report = fairness_of_replay(trace, config, gains=True)
            lines += [_shares(scheduler, report), _waits(scheduler, report), _worst_gap(scheduler, report)]
            if self.in_actual_cost:
                lines[-1] += f"; in actual cost {_gap(worst_gap_in_actual_cost(trace, config).gap)}"
            if self.charges:
                lines.append(_charges(scheduler, report))
                reports.append(report)
        if self.charges and len(reports) == 2:
            lines.append(_who_gains(self.schedulers, reports))
        return lines


def _options(spec: RunSpec) -> str:
    """The command-line options of a run spec's engine and pricing settings."""
    options = [f"--engines {spec.engines}" if spec.engines is not None else "",
               f"--placement {spec.placement}" if spec.placement is not None else "",
               "--cache-aware" if spec.pricing == "cache-aware" else ""]
    return "".join(f" {option}" for option in options if option)


def _charges(spec: str, report: FairnessReport) -> str:
    users = sorted(report.users.items())
    charged = Fixed.of(f.charged for _, f in users)
    return f"{spec}: charged in all: {', '.join(f'{user} {charged(f.charged)}' for user, f in users)}"


def _who_gains(specs: tuple[str, ...], reports: list[FairnessReport]) -> str:
    """Whose share of the charges the second run lowers against the first: who gains by it."""
    first, second = reports
    total = [sum(f.charged for f in r.users.values()) or 1.0 for r in reports]
    change = {user: second.users[user].charged / total[1] - first.users[user].charged / total[0] for user in first.users if user in second.users}
    gain = Fixed(1, sign=True)
    moved = ", ".join(f"{user} {gain(100 * d)} pp" for user, d in sorted(change.items(), key=lambda item: item[1]))
    return f"share of all charges, {specs[1]} against {specs[0]}: {moved}"


def _across_replicas(trace: Trace, config: ReplayConfig, first: int | None) -> list[str]:
    """Two lines for one run of a lesson across replicas: the shares (with the first
    dispatches counted), then the worst gap in c_max, stranded capacity and makespan."""
    replicas = config.replicas
    label = f"{config.scheduler}, {replicas.describe() if replicas.replicated else 'one balancer'}"
    if replicas.replicated:
        report, measures = replica_measures(trace, config)
        gap, stranded, makespan = measures.in_c_max(measures.worst_gap), measures.stranded, measures.makespan
        against = f" ({ratio(measures.makespan_ratio)} × one balancer's)"
    else:
        tally, report = tally_replay(trace, config)
        gap = report.worst_gap.gap / tally.c_max if report.worst_gap is not None and tally.c_max else None
        stranded, makespan, against = 0.0, tally.last_t, ""
    users = sorted(report.users)
    shares = ", ".join(f"{user} {percent(report.share(user))}" for user in users)
    if len(users) == 2 and report.share(users[1]):
        shares += f" ({amount(round(report.share(users[0]) / report.share(users[1]), 1))} : 1)"
    if first is not None:
        counts = _first_dispatches(trace, config, first)
        shares += f"; first {count(first)} dispatches {' : '.join(count(counts[user]) for user in users)}"
    return [f"{label}: shares while congested {shares}",
            f"{label}: worst |W_i - W_j| {_gap_in_c_max(gap)}, stranded capacity {percent(stranded)}, makespan {TENTHS(makespan)} s{against}"]


def _gap_in_c_max(gap: float | None) -> str:
    return "- (never two users backlogged together)" if gap is None else f"{TENTHS(gap)} c_max"  # one format for every run


def _first_dispatches(trace: Trace, config: ReplayConfig, n: int) -> Counter[str]:
    """How many of the first ``n`` dispatches went to each user."""
    counts: Counter[str] = Counter()
    left = n
    for columns, _ in Replay(trace, config).chunks():
        rows = rows_from_replay(columns, trace, config.scheduler)
        for kind, user in zip(rows.kind, rows.user):
            if kind == "dispatch" and left > 0:
                counts[user] += 1  # type: ignore[index]  # a dispatch row names its user
                left -= 1
        if not left:
            break
    return counts


def _charged(report: FairnessReport) -> str:
    """What the scheduler's log charges at dispatch, which the figures of ``report`` count."""
    return "the input charged at dispatch" if traits(report.scheduler).charges == "actual" else "charged cost"


def _shares(spec: str, report: FairnessReport) -> str:
    shares = ", ".join(f"{user} {percent(report.share(user))}" for user in sorted(report.users))
    return f"{spec}: shares of {_charged(report)} while congested: {shares}"


def _waits(spec: str, report: FairnessReport) -> str:
    waits = ", ".join(f"{user} {TENTHS(f.wait_quantile(0.5))} / {TENTHS(f.wait_quantile(0.99))} s"
                      for user, f in sorted(report.users.items()))
    return f"{spec}: waits p50 / p99: {waits}"


def _worst_gap(spec: str, report: FairnessReport) -> str:
    line = f"{spec}: worst |W_i - W_j| in {_charged(report)} {_gap(report.worst_gap)}"
    gain = report.worst_gain
    if gain is not None:  # §3.3: the loophole shows here, not in the gap between two backlogged users
        line += (f"; of any user over a backlogged one (§3.3) {amount(gain.gain)} ({gain.ahead} over {gain.behind}), "
                 f"{'within' if gain.gain <= gain.bound else 'over'} 2 c_max = {amount(gain.bound)}")
    return line


def _gap(gap: Gap | None) -> str:
    if gap is None:
        return "- (never two users backlogged together)"
    return f"{amount(gap.gap)} ({gap.ahead} over {gap.behind}, t {TENTHS(gap.start_t)} to {TENTHS(gap.end_t)})"


LESSONS: dict[str, Lesson] = {
    lesson.name: lesson
    for lesson in (
        Lesson(
            "worked-example", "The worked example", "§2.7",
            "The article's table: A's requests cost 3, B's cost 1, both backlogged from t = 0, one slot. "
            "Step by dispatch and watch SFQ pick the smaller meter, set v to it and charge after: "
            "A B B B A B B B, with v 0 0 1 2 3 3 4 5. DRR, with quantum 3, reaches the same order by handing "
            "out credit first: a visit sends while the head request fits the deficit.",
            "seed-example", "sfq", ("drr",), slots=1, lockstep="dispatch",
        ),
        Lesson(
            "heavy-vs-light", "Heavy against light", "§4.1, §4.2",
            "One user's requests cost 1,000, the other's 100. SFQ lets a heavy request in as soon as its meter "
            "is the smallest and charges all 1,000 after, so the heavy user then rests while the light one "
            "catches up. DRR here has quantum 100, the light cost: a heavy head waits for ten visits' credit "
            "before it fits.",
            "heavy-vs-light", "sfq", ("drr",), slots=4, lockstep="time", quantum=100.0,
        ),
        Lesson(
            "idle-return", "Returning from idle", "§4.3",
            "Two steady users keep both slots busy; 'returner' sends ten requests at t = 5, goes quiet, and "
            "sends ten more later. DRR puts it at the tail of the active list with deficit 0, so it waits up "
            "to a full round. SFQ joins it at max(S_i, v): with no charge left on its meter it is a candidate "
            "at the next dispatch, and its idle time earns it nothing.",
            "idle-return", "sfq", ("drr",), slots=2, lockstep="time",
        ),
        Lesson(
            "trickle", "The trickle loophole", "§2.4, §3.3",
            "Two bulk users are backlogged from t = 0; 'trickle' sends one 400-cost request every 2 s, and "
            "whenever it is served at once its queue is empty before the next arrives. Under sfq-reset every "
            "return joins at v, forgetting what it was charged, and it is served ahead of the bulk users again "
            "and again. Under sfq it joins at max(S_i, v), keeps its charge, and gets no more than its share.",
            "trickle", "sfq-reset", ("sfq",), slots=1, lockstep="time",
        ),
        Lesson(
            "global-idle", "The global idle reset", "§2.5, §3.4",
            "Three users send a burst at t = 0 and another at t = 100; user-0 also sends one 1,000-cost "
            "request in the first. When the first burst drains nobody is waiting: v jumps to the largest "
            "meter (the idle_reset row), so the second burst starts everyone on one line and user-0's heavy "
            "request is forgotten. DRR has no such state: each deficit went to 0 when its queue emptied.",
            "global-idle", "sfq", ("drr",), slots=1, lockstep="time",
        ),
        Lesson(
            "weights", "Weights", "§4.4",
            "Two backlogged users with weights 1 and 2, every request costing 100. SFQ charges c / w_i, so "
            "w-1's meter grows half as fast as w-0's; DRR gives each visit a quantum Q × w_i, so w-1 sends two "
            "requests a round. Both serve them 1 : 2 while both wait, and w-1 drains first.",
            "weighted", "sfq", ("drr",), slots=1, lockstep="dispatch", users=2,
        ),
        Lesson(
            "estimate-vs-actual", "Estimated against actual cost", "§5.1, §6.2",
            "Three users send similar prompts, but 'honest' uses 90% of its max_tokens, 'typical' 50% and "
            "'padder' 8%. SFQ charges an estimate at dispatch (max_tokens × the learned output ratio) and never "
            "corrects it, so the padder pays for output it never generates. VTC charges the input at dispatch "
            "and the actual output at completion: its order depends on completions.",
            "calibration", "sfq", ("vtc",), slots=8, lockstep="time", in_actual_cost=True,
        ),
        Lesson(
            "replicas", "Several balancers", "§8",
            "'premium' (weight 4) and 'regular' (weight 1) wait with equal 512-token requests for 4 slots, and one SFQ "
            "serves them 4 : 1. Two replicas with hash routing put premium on replica 1 and regular on replica 0, each "
            "with 2 slots and meters of its own: neither replica ever sees the other user, so the weights have nothing "
            "to act on, the split is 1 : 1 and, once regular is done, its slots stand idle while premium waits (the §8 "
            "limit, as in ai-dynamo/dynamo#15187). With share global the replicas are one SFQ again: 4 : 1 comes back.",
            "premium-regular", "sfq", ("sfq@replicas=2,router=hash,share=none", "sfq@replicas=2,router=hash,share=global"),
            slots=4, lockstep="dispatch", first_dispatches=320,
        ),
        Lesson(
            "multi-turn", "The multi-turn user", "§14",
            "Chat users resend their whole conversation each turn and one-shot users send fresh prompts, all behind one "
            "system prompt, on 2 engines that cache prompt prefixes, with requests sent where their prefix is held. "
            "Cache-blind pricing charges every input token, so a chat user pays again each turn for history its engine "
            "does not compute. Cache-aware pricing charges max(1, input - cached), the cached tokens predicted at dispatch: "
            "watch the chat users' meters grow slower and their share of the dispatches rise.",
            "multi-turn", "sfq@engines=2,placement=prefix,pricing=cache-aware", ("sfq@engines=2,placement=prefix",),
            slots=2, lockstep="time", charges=True,
        ),
        Lesson(
            "round-robin-tokens", "Round-robin is fair in requests, not in tokens", "§15",
            "'long' sends 2,000-token prompts and 'short' 100-token ones, both backlogged from t = 0. llm-d's round-robin "
            "gives each flow one request per turn, whatever it costs, so long gets about nine tenths of the tokens. "
            "SFQ charges each request its cost and least attained service counts what each user was served: both "
            "keep the split near half.",
            "long-short", "llm-d", ("sfq", "las"), slots=4, lockstep="time",
        ),
        Lesson(
            "priority-bands", "Priority bands and who starves", "§15",
            "'batch' (priority 0, weight 1) has 200 requests waiting when 'interactive' (priority 10, weight 4) starts "
            "sending more than the 2 slots serve. llm-d serves its bands strictly: while interactive waits, batch gets "
            "nothing. SFQ with the same 4 : 1 as weights serves both while both wait, batch a fifth, for longer waits of interactive's.",
            "bands", "llm-d", ("sfq",), slots=2, lockstep="time",
        ),
    )
}

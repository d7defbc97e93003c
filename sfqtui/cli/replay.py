"""`sfqtui replay`, `sfqtui demo` and `sfqtui serve`: the dashboard in a terminal or a browser."""

import errno
import shlex
import socket
import sys
from pathlib import Path
from typing import Annotated

import typer

from sfqtui.cli.command import Command
from sfqtui.cli.errors import fail, refuses_bad_input
from sfqtui.cli.fixed_log import refuse_trace_options
from sfqtui.cli.one_slot import note_one_slot
from sfqtui.cli.openings import check_openings
from sfqtui.cli.replay_options import NO_CHOICES, ReplayChoices, with_replicated_replay_options
from sfqtui.core.log.lockstep import MODES
from sfqtui.core.replay.config import ReplayConfig
from sfqtui.core.replay.run_spec import parse_run_specs
from sfqtui.core.schedulers import SCHEDULERS
from sfqtui.core.schedulers.registry import check_schedulers
from sfqtui.errors import InputError
from sfqtui.runs.opening import Opening, is_event_log, one_path
from sfqtui.scenarios import DEMO_TRACE
from sfqtui.trace.write import read_metadata


def _opening(path: Path | None, scheduler: str, replay: ReplayChoices) -> Opening:
    path = path or DEMO_TRACE
    is_log = is_event_log(path)
    # The trace's own slot suggestion, so that settings checked against the slots (--replicas) see it.
    metadata = {} if is_log else read_metadata(path)
    config = replay.config(check_schedulers([scheduler])[0], metadata)
    return Opening(path=path, is_log=is_log, config=config, slots_given=replay.slots_chosen is not None)


# The dashboard's own options; every other option of `replay` says how to replay a trace.
_DASHBOARD_OPTIONS = ("paths", "speed", "play", "lockstep")
CHECK_ONLY = "check only"  # the context object of `serve`'s check of its arguments: replay checks them and opens nothing


@refuses_bad_input
@with_replicated_replay_options
def replay(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(metavar="TRACE_OR_LOG", help="A trace (replayed with the core) or a saved event log; several traces are read as "
                       "one (a group's recordings, one a replica). Default: the bundled demo trace.", show_default=False),
    ] = None,
    scheduler: Annotated[str, typer.Option("--scheduler", "-s", help=f"Scheduling algorithm (for a trace): {', '.join(SCHEDULERS)}.")] = "sfq",
    speed: Annotated[float, typer.Option(help="Events per second when playing.")] = 10.0,
    play: Annotated[bool, typer.Option("--play", help="Start playing at once.")] = False,
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare",
            "-c",
            help=f"Comma-separated run specs to step beside the main one, in panes side by side: a scheduler ({', '.join(SCHEDULERS)}), "
            "with replica settings after @ where they differ from the main run's, e.g. sfq,drr or "
            "sfq@replicas=2,router=hash,share=none (settings: replicas, router, share, seed, slots, engines; docs/guide.md).",
            show_default=False,
        ),
    ] = None,
    lockstep: Annotated[
        str,
        typer.Option("--lockstep", help="Step the panes together by time or by dispatch number (the k-th dispatch of each); l switches."),
    ] = "time",
    replay: ReplayChoices = NO_CHOICES,  # with_replicated_replay_options puts the options given here
) -> None:
    """Open the dashboard: step the scheduler event by event and see why each request
    was dispatched when it was. With --compare, the same trace under other schedulers
    in panes side by side, stepped together, with where their orders part.

    Keys: → / ← step, n / p next / previous dispatch, space play, + / - speed, g go to,
    u run until a user's dispatch, r next idle reset, x next invariant violation,
    d dispatches only, f filter by user, o sort meters, l lockstep by time or dispatch,
    k replica shown (all, 0, 1, ...; with --replicas), ? help, ctrl+p every command.

    With --replicas K, each replica's own v and band, the replica of each event in the log,
    and where each user's requests went. One SFQ beside a replicated run:
    --compare 'sfq@replicas=2,router=hash,share=none'.
    """
    from sfqtui.ui.app import run_dashboard

    if speed <= 0:
        raise fail("--speed must be > 0")
    if lockstep not in MODES:
        raise fail(f"--lockstep must be one of {', '.join(MODES)}")
    path = one_path(paths) if paths else None
    if path is not None and is_event_log(path):
        refuse_trace_options(ctx, path, _DASHBOARD_OPTIONS)
    openings = [_opening(path, scheduler, replay)]
    if compare:
        base = openings[0]
        openings += [base.rerun(**spec.changes(base.config)) for spec in parse_run_specs(compare)]
    for trace, source in check_openings(openings).items():
        note_one_slot(trace, source.suggested_slots, replay.slots_chosen, replay.service)
    if ctx.obj != CHECK_ONLY:
        run_dashboard(openings, speed=speed, autoplay=play, lockstep=lockstep)


@refuses_bad_input
def demo(play: Annotated[bool, typer.Option("--play/--no-play", help="Start playing at once.")] = True) -> None:
    """Open the dashboard on the bundled demo trace (contention, a heavy user, an idle user
    returning and a global idle reset within a minute of playing)."""
    from sfqtui.ui.app import run_dashboard

    opening = Opening(path=DEMO_TRACE, is_log=False, config=ReplayConfig())
    check_openings([opening])
    run_dashboard(opening, autoplay=play)


@refuses_bad_input
def serve(
    args: Annotated[list[str] | None, typer.Argument(help="What to pass to `sfqtui replay` (a trace or log and its options).", show_default=False)] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "localhost",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
) -> None:
    """Serve the dashboard to a browser on localhost (textual-serve): each visitor gets
    their own `sfqtui replay` session.

    Example: sfqtui serve -- traces/demo.parquet --scheduler drr
    """
    from textual_serve.server import Server

    _check_replay_arguments(args or [])
    _check_port(host, port)
    command = shlex.join([sys.executable, "-m", "sfqtui", "replay", *(args or [])])
    typer.echo(f"serving `{command}` on http://{host}:{port}")
    Server(command, host=host, port=port, title="sfqtui").serve()


def _check_replay_arguments(args: list[str]) -> None:
    """Refuse what `sfqtui replay ARGS` would refuse, with its message and exit status, before
    serving: every visitor's session runs it, and none should be the first to find out."""
    checking = typer.Typer(rich_markup_mode="markdown", pretty_exceptions_enable=False, context_settings={"help_option_names": ["-h", "--help"]})
    checking.command(cls=Command)(replay)
    try:
        typer.main.get_command(checking).main(args, prog_name="sfqtui replay", obj=CHECK_ONLY)
    except SystemExit as ended:  # the command's own end: 0 once checked, else replay's status, its message printed
        if ended.code:
            raise typer.Exit(ended.code if isinstance(ended.code, int) else 2) from None


def _check_port(host: str, port: int) -> None:
    """InputError when the server could not listen on ``host``:``port`` (every address the
    name has, as the server binds them), before textual-serve prints that it serves there."""
    try:
        for family, kind, proto, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE):
            with socket.socket(family, kind, proto) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's server does
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(address)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise InputError(f"port {port} is taken on {host} (another server listens there); --port picks another, "
                             f"e.g. --port {port + 1 if port < 65535 else 8001}") from None
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None

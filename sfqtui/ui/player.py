"""Space: play the leading run at a speed (events per second), or, for a live stream, pause
and resume following its newest event; a key that moves the cursor pauses play. The app
holds one ``Player`` and gives it its timer."""

from __future__ import annotations

from typing import Protocol

from textual.timer import Timer

from sfqtui.runs.run import Run

SPEEDS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 500.0, 2000.0, 10000.0)
TICKS_PER_S = 20


class PlayerHost(Protocol):
    @property
    def current(self) -> Run: ...

    def follow(self) -> None:
        """Put the other runs at the leading run's moment."""
        ...

    def refresh_views(self) -> None: ...


class Player:
    def __init__(self, host: PlayerHost, speed: float) -> None:
        self._host = host
        self.speed = speed
        self.playing = False
        self._carry = 0.0  # steps due but not taken yet (a speed below the tick rate)
        self.timer: Timer | None = None  # ticks TICKS_PER_S times a second while playing

    def toggle(self) -> None:
        if self._host.current.toggle_following():  # a live stream: space pauses and resumes following it
            self._host.refresh_views()
            return
        self._play(not self.playing)
        self._host.refresh_views()

    def moved(self) -> None:
        """The user moved the cursor (a step key, go to, a search, a click): play pauses, so that
        the step is not carried on past what was asked; a live run follows its newest event only from there."""
        self._host.current.moved()
        if self.playing:
            self._play(False)

    def _play(self, playing: bool) -> None:
        self.playing = playing
        self._carry = 0.0
        if self.timer is not None:
            if playing:
                self.timer.resume()
            else:
                self.timer.pause()

    def tick(self) -> None:
        self._carry += self.speed / TICKS_PER_S
        steps = int(self._carry)
        if steps:
            self._carry -= steps
            run = self._host.current
            moved = run.cursor.step(steps)
            if moved is None and not run.loading:
                self.toggle()
                return
            self._host.follow()
            self._host.refresh_views()

    def _set_speed(self, direction: int) -> None:
        faster = [s for s in SPEEDS if (s > self.speed if direction > 0 else s < self.speed)]
        if faster:
            self.speed = faster[0] if direction > 0 else faster[-1]
        self._host.refresh_views()

    def faster(self) -> None:
        self._set_speed(+1)

    def slower(self) -> None:
        self._set_speed(-1)

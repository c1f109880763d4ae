"""Progress on stderr while DuckDB works.

DuckDB's own progress bar is no help here: Mondrian's recursive partitioning reports no progress to it, so
the bar only appears, at 100 %, when the query ends. Instead a second thread polls the connection
(``query_progress()`` may be called while another thread runs a query) and, once the run has lasted
`after` seconds, shows the step under way, the time elapsed, and DuckDB's percentage for the step when it
moves (reading and writing files report one). On a terminal it is one line, redrawn in place every `every`
seconds. In a log or a pipe, where every update stays as a line of its own, a line is written only when
something changed: a new step, the percentage past another tenth, or (for a long step without one) another
`quiet_for` seconds gone.
"""
from __future__ import annotations

import sys
import threading
import time

import duckdb

AFTER_SECONDS = 1.0  # quick runs print nothing
EVERY_SECONDS = 1.0
QUIET_FOR_SECONDS = 60.0  # logs and pipes: the longest silence during a step that reports no percentage


def quiet_duckdb(con: duckdb.DuckDBPyConnection) -> None:
    """Keep DuckDB's progress measurement (query_progress() needs it) but never let it print its bar."""
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")


class Progress:
    """Use as a context manager around a command's work; call :meth:`step` as it moves on."""

    def __init__(self, con: duckdb.DuckDBPyConnection, command: str, *, quiet: bool,
                 after: float = AFTER_SECONDS, every: float = EVERY_SECONDS, quiet_for: float = QUIET_FOR_SECONDS,
                 stream=None):
        self.con, self.command, self.quiet, self.after, self.every = con, command, quiet, after, every
        self.quiet_for = quiet_for
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._step, self._step_first = "starting", None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="duckdb-anon progress", daemon=True)
        self._started = time.perf_counter()
        self._printed = False

    def step(self, text: str) -> None:
        with self._lock:
            self._step, self._step_first = text, None

    def __enter__(self) -> "Progress":
        quiet_duckdb(self.con)
        self._started = time.perf_counter()
        if not self.quiet:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()
        if self._printed and self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def _state(self) -> tuple[str, float | None]:
        """The step under way and DuckDB's percentage for it (None while it does not move)."""
        try:
            percent = self.con.query_progress()  # -1 when no query runs
        except duckdb.Error:
            percent = -1.0
        with self._lock:
            if percent >= 0 and self._step_first is None:
                self._step_first = percent
            moving = percent >= 0 and self._step_first is not None and percent - self._step_first >= 0.5
            return self._step, percent if moving else None

    def _line(self, step: str, percent: float | None, elapsed: float) -> str:
        shown = "" if percent is None else f", {percent:.0f} %"
        return f"duckdb-anon {self.command}: {step} ({elapsed:.0f} s{shown})"

    def _run(self) -> None:
        last, last_key = None, None
        while not self._stop.wait(0.1):
            now = time.perf_counter()
            elapsed = now - self._started
            if elapsed < self.after or (last is not None and now - last < self.every):
                continue
            step, percent = self._state()
            if self.tty:
                self.stream.write(f"\r{self._line(step, percent, elapsed)}\x1b[K")
            else:  # a line when the step or the tenth changes, or after a long silence
                key = (step, None if percent is None else int(percent // 10))
                if key == last_key and now - last < self.quiet_for:
                    continue
                last_key = key
                self.stream.write(self._line(step, percent, elapsed) + "\n")
            last = now
            self.stream.flush()
            self._printed = True

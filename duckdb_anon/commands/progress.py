"""Progress on stderr while DuckDB works.

DuckDB's own progress bar is no help here: Mondrian's recursive partitioning reports no progress to it, so
the bar only appears, at 100 %, when the query ends. Instead a second thread polls the connection
(``query_progress()`` may be called while another thread runs a query) and, once the run has lasted
`after` seconds, prints every `every` seconds the step under way, the time elapsed, and DuckDB's percentage
for the step when it moves (reading and writing files report one). On a terminal the line is redrawn in
place; otherwise (a log, a pipe) each update is a line of its own.
"""
from __future__ import annotations

import sys
import threading
import time

import duckdb

AFTER_SECONDS = 1.0  # quick runs print nothing
EVERY_SECONDS = 1.0


def quiet_duckdb(con: duckdb.DuckDBPyConnection) -> None:
    """Keep DuckDB's progress measurement (query_progress() needs it) but never let it print its bar."""
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")


class Progress:
    """Use as a context manager around a command's work; call :meth:`step` as it moves on."""

    def __init__(self, con: duckdb.DuckDBPyConnection, command: str, *, quiet: bool,
                 after: float = AFTER_SECONDS, every: float = EVERY_SECONDS, stream=None):
        self.con, self.command, self.quiet, self.after, self.every = con, command, quiet, after, every
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

    def _line(self, elapsed: float) -> str:
        try:
            percent = self.con.query_progress()  # -1 when no query runs
        except duckdb.Error:
            percent = -1.0
        with self._lock:
            if percent >= 0 and self._step_first is None:
                self._step_first = percent
            moving = percent >= 0 and self._step_first is not None and percent - self._step_first >= 0.5
            step = self._step
        shown = f", {percent:.0f} %" if moving else ""
        return f"duckdb-anon {self.command}: {step} ({elapsed:.0f} s{shown})"

    def _run(self) -> None:
        last = None
        while not self._stop.wait(0.1):
            now = time.perf_counter()
            elapsed = now - self._started
            if elapsed < self.after or (last is not None and now - last < self.every):
                continue
            last = now
            line = self._line(elapsed)
            self.stream.write(f"\r{line}\x1b[K" if self.tty else line + "\n")
            self.stream.flush()
            self._printed = True

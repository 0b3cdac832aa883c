"""The targets a benchmark judged, and its last line: how many it met, and which it
missed with their figures, so that a caller keeping only that line (an acceptance
script, a CI log's tail) still knows what missed."""

from __future__ import annotations


class Tally:
    """Each target's verdict as it is printed (`said`), and the line that ends the
    benchmark's output (`last_line`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.missed: list[str] = []
        self.judged = 0

    def said(self, met: bool, figure: str = "") -> str:
        """`met` or `MISSED`, for the line that prints the target; a missed one's
        `figure` (what it measured, against what) is kept for the last line."""
        self.judged += 1
        if not met:
            self.missed.append(figure or f"target {self.judged}")
        return "met" if met else "MISSED"

    def last_line(self) -> str:
        met = self.judged - len(self.missed)
        line = f"{self.name}: {met} of {self.judged} targets met"
        return line + (f"; MISSED: {'; '.join(self.missed)}" if self.missed else "")

"""The human's change and the arm's, file by file, side by side, as a run page shows them.

Each file either side touched, those only one side touched first; in each, the human's
hunks and the arm's, every line with its base line number and whether it was removed
or added; each human hunk labelled with the sites of the human reference it holds
(covered, matched or missed by the arm), each arm hunk with the sites it touches or as
touching none. Pure: the sites' rows and the two patches in, the files out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

FOLD_LINES = 80
"""A file whose two sides hold more lines than this is shown folded."""


@dataclass(frozen=True)
class Line:
    kind: str  # "context", "removed" or "added"
    base: int | None  # the line's number at base (None for an added line)
    text: str


@dataclass(frozen=True)
class Hunk:
    first: int  # its base lines, first and last
    last: int
    label: str
    tone: str  # "matched", "covered", "missed" (a human hunk), "site" or "other" (an arm's)
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class FileDiff:
    path: str
    touched_by: str  # "both", "the human only", "the arm only"
    human: tuple[Hunk, ...]
    arm: tuple[Hunk, ...]

    @property
    def size(self) -> int:
        return sum(len(h.lines) for h in (*self.human, *self.arm))

    @property
    def folded(self) -> bool:
        return self.size > FOLD_LINES


Span = tuple[int, int, Mapping[str, Any]]


Parsed = dict[str, list[tuple[int, int, tuple[Line, ...]]]]


@lru_cache(maxsize=64)  # a bench's human patch is the same on each of its runs' pages
def _parsed(patch: str | None) -> Parsed:
    """Per base path, each hunk's base range and lines; an unreadable patch has none.
    Not to be changed by its callers: it is shared."""
    try:
        files = PatchSet(patch or "")
    except UnidiffParseError:
        return {}
    found: Parsed = {}
    for f in files:
        path = f.source_file.removeprefix("a/") if f.source_file != "/dev/null" else ""
        path = path or f.target_file.removeprefix("b/")
        for h in f:
            lines = tuple(
                Line(
                    kind="added" if x.is_added else "removed" if x.is_removed else "context",
                    base=x.source_line_no,
                    text=x.value.rstrip("\n"),
                )
                for x in h
            )
            last = h.source_start + max(h.source_length, 1) - 1
            found.setdefault(path, []).append((h.source_start, last, lines))
    return found


def _spans(sites: Sequence[Mapping[str, Any]]) -> dict[str, list[Span]]:
    spans: dict[str, list[Span]] = {}
    for row in sorted(sites, key=lambda r: int(r["site"])):
        first = int(row["start"] or 0)
        last = first + max(int(row["length"] or 0), 1) - 1
        spans.setdefault(str(row["file"]), []).append((first, last, row))
    return spans


def _human_hunk(first: int, last: int, lines: tuple[Line, ...], spans: list[Span]) -> Hunk:
    held = [row for a, b, row in spans if a <= last and first <= b]
    if not held:
        return Hunk(first, last, "no site (a file the sites leave out)", "other", lines)
    said = [
        f"site {row['site']}: "
        + ("matched" if row["matched"] else "covered" if row["covered"] else "missed")
        for row in held
    ]
    tone = (
        "matched"
        if all(r["matched"] for r in held)
        else "covered"
        if all(r["covered"] for r in held)
        else "missed"
    )
    return Hunk(first, last, "; ".join(said), tone, lines)


def _arm_hunk(first: int, last: int, lines: tuple[Line, ...], spans: list[Span]) -> Hunk:
    touched = [str(row["site"]) for a, b, row in spans if a <= last and first <= b]
    if not touched:
        return Hunk(first, last, "touches no site", "other", lines)
    return Hunk(first, last, f"site {', '.join(touched)}", "site", lines)


def side_by_side(
    sites: Sequence[Mapping[str, Any]], human: str | None, arm: str | None
) -> list[FileDiff]:
    """Every file the human or the arm changed, those one side alone touched first."""
    theirs, ours, spans = _parsed(human), _parsed(arm), _spans(sites)
    shown = []
    for path in sorted(set(theirs) | set(ours)):
        mine = spans.get(path, [])
        left = tuple(_human_hunk(a, b, lines, mine) for a, b, lines in theirs.get(path, []))
        right = tuple(_arm_hunk(a, b, lines, mine) for a, b, lines in ours.get(path, []))
        touched_by = "both" if left and right else "the human only" if left else "the arm only"
        shown.append(FileDiff(path, touched_by, left, right))
    return sorted(shown, key=lambda f: (f.touched_by == "both", f.path))

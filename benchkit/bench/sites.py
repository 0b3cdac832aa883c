"""Coverage of the human reference: sites, covered, matched, unrelated, files.

Pure functions over parsed diffs. A diff is parsed from `git diff -U0 -M` text into
`FileChange` records; all positions are on the base (old) side.

A **site** is one hunk of the human diff: a run of base lines the human modified or
removed, or a pure insertion anchored after base line `start` (0 = top of file).
A rename with no content change and a changed binary file are one site each.

The arm **covers** a site when one of its hunks touches it: it changes a base line
of the site, or it inserts at the site's anchor. A hunk that replaces lines `a..b`
also touches the anchors `a-1..b` at its edges, since `-U0` cannot say on which side
of the replaced lines an insertion fell. The arm **matches** a site when, over the
smallest base region holding the site and every hunk of either side that touches it,
both diffs leave the same text up to whitespace. An arm hunk that touches no site is
**unrelated**.
"""

from __future__ import annotations

import fnmatch
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

SiteKind = str  # "lines" | "insert" | "rename" | "binary"

_INDEX_LINE = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)", re.MULTILINE)


class DiffError(ValueError):
    """A diff that cannot be parsed."""


@dataclass(frozen=True, kw_only=True)
class Hunk:
    """One `-U0` hunk: base lines `start..start+length-1` become `new_lines`.

    When `length` is 0 the hunk is a pure insertion after base line `start`.
    """

    start: int
    length: int
    new_lines: tuple[str, ...]

    @property
    def end(self) -> int:
        """Last base line replaced (start - 1 for an insertion)."""
        return self.start + self.length - 1

    def touches(self, other: Hunk) -> bool:
        if self.length and other.length:
            return self.start <= other.end and other.start <= self.end
        if not self.length and not other.length:
            return self.start == other.start
        insertion, block = (self, other) if not self.length else (other, self)
        return block.start - 1 <= insertion.start <= block.end


@dataclass(frozen=True, kw_only=True)
class FileChange:
    """What one diff did to one file."""

    old_path: str | None  # None for a new file
    new_path: str | None  # None for a deleted file
    hunks: tuple[Hunk, ...] = ()
    binary: bool = False
    new_blob: str | None = None  # abbreviated blob id of the result, from the index line

    @property
    def path(self) -> str:
        """The base path, or the new path for a new file."""
        return self.old_path or self.new_path or ""

    @property
    def is_rename(self) -> bool:
        return (
            self.old_path is not None
            and self.new_path is not None
            and self.old_path != self.new_path
        )

    @property
    def lines_changed(self) -> int:
        return sum(h.length + len(h.new_lines) for h in self.hunks)


@dataclass(frozen=True, kw_only=True)
class Site:
    index: int
    file: str
    kind: SiteKind
    start: int
    length: int


@dataclass(frozen=True, kw_only=True)
class SiteScore:
    site: Site
    covered: bool
    matched: bool


@dataclass(frozen=True, kw_only=True)
class Coverage:
    sites: tuple[SiteScore, ...]
    unrelated: int
    files_recall: float | None
    files_precision: float | None
    arm_lines: int

    @property
    def total(self) -> int:
        return len(self.sites)

    @property
    def covered(self) -> int:
        return sum(s.covered for s in self.sites)

    @property
    def matched(self) -> int:
        return sum(s.matched for s in self.sites)


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13}


def unquote(name: str) -> str:
    """A path as git prints it, unquoted: git wraps a name holding a tab, a quote or
    (without core.quotePath=false) a non-ASCII byte in double quotes, with C escapes
    and octal bytes (`"\\303\\274.txt"` is `ü.txt`)."""
    if not (len(name) >= 2 and name[0] == name[-1] == '"'):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            if body[i + 1] in "01234567":
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(_ESCAPES.get(body[i + 1], ord(body[i + 1])))
            i += 2
            continue
        out += body[i].encode()
        i += 1
    return out.decode("utf-8", errors="surrogateescape")


def _strip_prefix(name: str | None) -> str | None:
    if name is None or name == "/dev/null":
        return None
    name = unquote(name)
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse_diff(text: str) -> tuple[FileChange, ...]:
    """Parse `git diff -U0` output into one `FileChange` per file."""
    if not text.strip():
        return ()
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        raise DiffError(f"unreadable diff: {exc}") from exc
    changes = []
    for f in patch:
        old = _strip_prefix(f.source_file)
        new = _strip_prefix(f.target_file)
        if f.is_added_file:
            old = None
        if f.is_removed_file:
            new = None
        blob = _INDEX_LINE.search(str(f.patch_info or ""))
        hunks = tuple(
            Hunk(
                start=h.source_start,
                length=h.source_length,
                new_lines=tuple(line.value for line in h.target_lines()),
            )
            for h in f
        )
        changes.append(
            FileChange(
                old_path=old,
                new_path=new,
                hunks=hunks,
                binary=bool(f.is_binary_file),
                new_blob=blob.group(2) if blob else None,
            )
        )
    return tuple(changes)


def excluded(path: str, globs: Sequence[str]) -> bool:
    """True when a path matches one of the globs (`*` also crosses `/`)."""
    return any(fnmatch.fnmatchcase(path, g) for g in globs)


def _kept(changes: Iterable[FileChange], globs: Sequence[str]) -> list[FileChange]:
    return [
        c
        for c in changes
        if not any(excluded(p, globs) for p in (c.old_path, c.new_path) if p is not None)
    ]


def _units(change: FileChange) -> list[tuple[SiteKind, Hunk | None]]:
    """The site-sized units of one file's change: its hunks, or one whole-file unit."""
    if change.binary:
        return [("binary", None)]
    if not change.hunks:
        return [("rename", None)] if change.is_rename else []
    return [("insert" if h.length == 0 else "lines", h) for h in change.hunks]


def human_sites(human: Iterable[FileChange], exclude: Sequence[str] = ()) -> list[Site]:
    """The sites of a human diff, in diff order, with the globs left out."""
    sites: list[Site] = []
    for change in _kept(human, exclude):
        for kind, hunk in _units(change):
            sites.append(
                Site(
                    index=len(sites),
                    file=change.path,
                    kind=kind,
                    start=hunk.start if hunk else 0,
                    length=hunk.length if hunk else 0,
                )
            )
    return sites


def normalize(lines: Iterable[str]) -> str:
    """Text with every whitespace character removed: the 'up to whitespace' rule."""
    return "".join("".join(lines).split())


def _region(hunks: Sequence[Hunk]) -> tuple[int, int]:
    """Base lines `lo..hi` spanned by hunks (hi = lo - 1 when only insertions)."""
    lo = min(h.start + 1 if h.length == 0 else h.start for h in hunks)
    hi = max(h.end if h.length else h.start for h in hunks)
    return lo, max(hi, lo - 1)


def _apply(hunks: Sequence[Hunk], lo: int, hi: int, base: Sequence[str] | None) -> list[str] | None:
    """The text of base lines `lo..hi` after the hunks; None if base text is needed but absent."""
    out: list[str] = []
    pos = lo

    def take(upto: int) -> bool:
        nonlocal pos
        if upto >= pos:
            if base is None or upto > len(base):
                return False
            out.extend(base[pos - 1 : upto])
        pos = max(pos, upto + 1)
        return True

    for h in sorted(hunks, key=lambda h: (h.start + (0 if h.length else 0.5), h.length)):
        if not take(h.start if h.length == 0 else h.start - 1):
            return None
        out.extend(h.new_lines)
        pos = max(pos, h.end + 1)
    if not take(hi):
        return None
    return out


class _Index:
    """The hunks of one file's change, sorted by base position, so that the hunks
    touching a given one are found by bisection: a sweep over sorted positions instead
    of a scan of every hunk for every site."""

    def __init__(self, hunks: Sequence[Hunk]) -> None:
        self.hunks = hunks
        self.blocks = sorted(
            (i for i, h in enumerate(hunks) if h.length), key=lambda i: hunks[i].start
        )
        self.starts = [hunks[i].start for i in self.blocks]
        self.reach: list[int] = []  # the furthest end among the blocks up to here
        furthest = -1
        for i in self.blocks:
            furthest = max(furthest, hunks[i].end)
            self.reach.append(furthest)
        self.inserts = sorted(
            (i for i, h in enumerate(hunks) if not h.length), key=lambda i: hunks[i].start
        )
        self.anchors = [hunks[i].start for i in self.inserts]

    def touching(self, other: Hunk) -> list[int]:
        """The positions (in `hunks`) of the hunks that touch `other`, by `Hunk.touches`."""
        if other.length:  # blocks over its lines; insertions at its anchors start-1..end
            first, top, low, high = other.start, other.end, other.start - 1, other.end
        else:  # blocks whose lines or edges hold the anchor; insertions at it
            first, top, low, high = other.start, other.start + 1, other.start, other.start
        found = [
            self.blocks[k]
            for k in range(bisect_left(self.reach, first), bisect_right(self.starts, top))
            if self.hunks[self.blocks[k]].end >= first
        ]
        found += self.inserts[bisect_left(self.anchors, low) : bisect_right(self.anchors, high)]
        return found


def _match(site: int, human: _Index, arm: _Index, base: Sequence[str] | None) -> bool:
    """Whether both sides leave the same text, up to whitespace, over the smallest
    region holding the site and every hunk of either side that touches it."""
    hunk = human.hunks[site]
    involved_human, involved_arm = {site}, set(arm.touching(hunk))
    while True:  # grow the region until no hunk of either side straddles its edge
        lo, hi = _region(
            [human.hunks[i] for i in involved_human] + [arm.hunks[i] for i in involved_arm]
        )
        probe = Hunk(start=lo, length=hi - lo + 1, new_lines=()) if hi >= lo else hunk
        more_human = set(human.touching(probe)) - involved_human
        more_arm = set(arm.touching(probe)) - involved_arm
        if not more_human and not more_arm:
            break
        involved_human |= more_human
        involved_arm |= more_arm
    human_text = _apply([human.hunks[i] for i in involved_human], lo, hi, base)
    arm_text = _apply([arm.hunks[i] for i in involved_arm], lo, hi, base)
    if human_text is None or arm_text is None:
        return False
    return normalize(human_text) == normalize(arm_text)


BaseText = Callable[[str], Sequence[str] | None]


def _no_base(_: str) -> None:
    return None


def score(
    human: Sequence[FileChange],
    arm: Sequence[FileChange],
    *,
    exclude: Sequence[str] = (),
    base_text: BaseText | Mapping[str, Sequence[str]] = _no_base,
) -> Coverage:
    """Score an arm's diff against the human reference.

    `base_text(path)` gives a base file's lines (with their line ends); it is only
    needed where matching must read base lines that neither diff replaces.
    """
    lookup: BaseText = base_text.get if isinstance(base_text, Mapping) else base_text
    kept_human = _kept(human, exclude)
    kept_arm = _kept(arm, exclude)
    arm_by_path = {c.path: c for c in kept_arm}
    human_by_path = {c.path: c for c in kept_human}

    human_index = {path: _Index(c.hunks) for path, c in human_by_path.items()}
    arm_index = {path: _Index(c.hunks) for path, c in arm_by_path.items()}
    scores: list[SiteScore] = []
    for mine in kept_human:  # the sites in `human_sites` order, each with its hunk
        theirs = arm_by_path.get(mine.path)
        at = 0
        for kind, hunk in _units(mine):
            site = Site(
                index=len(scores),
                file=mine.path,
                kind=kind,
                start=hunk.start if hunk else 0,
                length=hunk.length if hunk else 0,
            )
            covered = matched = False
            if theirs is not None and kind == "rename":
                covered = theirs.is_rename
                matched = covered and theirs.new_path == mine.new_path
            elif theirs is not None and kind == "binary":
                covered, matched = True, theirs.binary and theirs.new_blob == mine.new_blob
            elif theirs is not None and hunk is not None:
                covered = bool(arm_index[mine.path].touching(hunk))
                matched = covered and _match(
                    at, human_index[mine.path], arm_index[mine.path], lookup(mine.path)
                )
            at += hunk is not None
            scores.append(SiteScore(site=site, covered=covered, matched=matched))

    unrelated = 0
    for change in kept_arm:
        mine_or_none = human_by_path.get(change.path)
        for kind, unit in _units(change):
            if mine_or_none is None:
                unrelated += 1
            elif unit is None:
                unrelated += kind == "rename" and not mine_or_none.is_rename
            elif not human_index[change.path].touching(unit):
                unrelated += 1

    human_files = set(human_by_path)
    arm_files = set(arm_by_path)
    both = len(human_files & arm_files)
    return Coverage(
        sites=tuple(scores),
        unrelated=unrelated,
        files_recall=both / len(human_files) if human_files else None,
        files_precision=both / len(arm_files) if arm_files else None,
        arm_lines=sum(c.lines_changed for c in kept_arm),
    )


EMPTY_COVERAGE = Coverage(
    sites=(), unrelated=0, files_recall=None, files_precision=None, arm_lines=0
)

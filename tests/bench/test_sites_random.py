"""Site scoring against a plain reference: many random base, human and arm changes
(insertions at either edge, deletions, renames, new, deleted and binary files), the
same coverage from `sites.score` as from the obvious quadratic implementation."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest

from benchkit.bench.sites import (
    Coverage,
    FileChange,
    Hunk,
    SiteScore,
    _apply,
    _kept,
    _region,
    _units,
    human_sites,
    normalize,
    score,
)

# ------------------------------------------------------------------ the reference


def _reference_match(
    site: Hunk, human: Sequence[Hunk], arm: Sequence[Hunk], base: Sequence[str] | None
) -> bool:
    """Every hunk of either side that touches the region, until none is left out."""
    involved_arm = [h for h in arm if h.touches(site)]
    involved_human = [site]
    while True:
        lo, hi = _region(involved_human + involved_arm)
        probe = Hunk(start=lo, length=hi - lo + 1, new_lines=()) if hi >= lo else site
        more_human = [h for h in human if h not in involved_human and h.touches(probe)]
        more_arm = [h for h in arm if h not in involved_arm and h.touches(probe)]
        if not more_human and not more_arm:
            break
        involved_human += more_human
        involved_arm += more_arm
    ours, theirs = _apply(involved_human, lo, hi, base), _apply(involved_arm, lo, hi, base)
    return ours is not None and theirs is not None and normalize(ours) == normalize(theirs)


def reference_score(
    human: Sequence[FileChange], arm: Sequence[FileChange], base: Mapping[str, Sequence[str]]
) -> Coverage:
    """Each site against every arm hunk of its file; each arm unit against every human
    hunk: quadratic, and plainly what the rules say."""
    kept_human, kept_arm = _kept(human, ()), _kept(arm, ())
    arm_by_path = {c.path: c for c in kept_arm}
    human_by_path = {c.path: c for c in kept_human}
    scores = []
    for site in human_sites(kept_human):
        mine, theirs = human_by_path[site.file], arm_by_path.get(site.file)
        covered = matched = False
        if theirs is not None and site.kind == "rename":
            covered = theirs.is_rename
            matched = covered and theirs.new_path == mine.new_path
        elif theirs is not None and site.kind == "binary":
            covered, matched = True, theirs.binary and theirs.new_blob == mine.new_blob
        elif theirs is not None:
            [hunk] = [h for h in mine.hunks if (h.start, h.length) == (site.start, site.length)]
            covered = any(h.touches(hunk) for h in theirs.hunks)
            matched = covered and _reference_match(
                hunk, mine.hunks, theirs.hunks, base.get(site.file)
            )
        scores.append(SiteScore(site=site, covered=covered, matched=matched))
    unrelated = 0
    for change in kept_arm:
        ours = human_by_path.get(change.path)
        for kind, unit in _units(change):
            if ours is None:
                unrelated += 1
            elif unit is None:
                unrelated += kind == "rename" and not ours.is_rename
            elif not any(unit.touches(h) for h in ours.hunks):
                unrelated += 1
    both = len(set(human_by_path) & set(arm_by_path))
    return Coverage(
        sites=tuple(scores),
        unrelated=unrelated,
        files_recall=both / len(human_by_path) if human_by_path else None,
        files_precision=both / len(arm_by_path) if arm_by_path else None,
        arm_lines=sum(c.lines_changed for c in kept_arm),
    )


# ------------------------------------------------------------------ random changes

WORDS = ["alpha", "beta", "gamma", "delta", "x = 1", "return y", "  pass", ""]


def _lines(rng: random.Random, n: int) -> tuple[str, ...]:
    return tuple(f"{rng.choice(WORDS)} {rng.randrange(4)}\n" for _ in range(n))


def _hunks(rng: random.Random, size: int, like: Sequence[Hunk] = ()) -> tuple[Hunk, ...]:
    """Sorted, apart (as one `git diff -U0` gives them): insertions anywhere from the
    top (after line 0) to after the last line, replacements and deletions; some copied
    from `like` (whitespace changed or not), so that matches happen."""
    hunks: list[Hunk] = []
    line = 0  # the last base line already used
    copies = {h.start: h for h in like}
    while line <= size:
        anchor = line + rng.randrange(0, 4)
        if anchor > size:
            break
        copy = copies.get(anchor) or copies.get(anchor + 1)
        if copy is not None and copy.start > line and rng.random() < 0.5:
            new = copy.new_lines
            if new and rng.random() < 0.3:
                new = (new[0].replace(" ", "  "), *new[1:])  # the same up to whitespace
            hunks.append(Hunk(start=copy.start, length=copy.length, new_lines=new))
            line = copy.end + 1 if copy.length else copy.start + 1
            continue
        if rng.random() < 0.35 or anchor == size:  # a pure insertion after `anchor`
            hunks.append(Hunk(start=anchor, length=0, new_lines=_lines(rng, rng.randint(1, 3))))
            line = anchor + 1
        else:
            start = anchor + 1
            length = min(rng.randint(1, 3), size - start + 1)
            new = _lines(rng, rng.choice([0, 1, 2, 3]))  # 0: a deletion
            hunks.append(Hunk(start=start, length=length, new_lines=new))
            line = start + length
        if rng.random() < 0.3:
            break
    return tuple(hunks)


def _changes(
    rng: random.Random, sizes: Mapping[str, int], like: Sequence[FileChange] = ()
) -> list[FileChange]:
    theirs = {c.path: c for c in like}
    changes = []
    for path, size in sizes.items():
        roll = rng.random()
        if roll < 0.15:
            continue  # this side leaves the file alone
        if roll < 0.22:
            changes.append(FileChange(old_path=path, new_path=f"moved/{path}"))  # a rename
        elif roll < 0.28:
            blob = rng.choice(["aaaa111", "bbbb222"])
            changes.append(FileChange(old_path=path, new_path=path, binary=True, new_blob=blob))
        elif roll < 0.32:
            whole = Hunk(start=1, length=size, new_lines=())
            changes.append(FileChange(old_path=path, new_path=None, hunks=(whole,)))  # deleted
        else:
            other = theirs.get(path)
            hunks = _hunks(rng, size, other.hunks if other else ())
            if hunks:
                changes.append(FileChange(old_path=path, new_path=path, hunks=hunks))
    if rng.random() < 0.3:  # a new file
        added = Hunk(start=0, length=0, new_lines=_lines(rng, 2))
        changes.append(FileChange(old_path=None, new_path="new.py", hunks=(added,)))
    return changes


@pytest.mark.parametrize("seed", range(400))
def test_score_agrees_with_the_reference_on_random_changes(seed: int) -> None:
    rng = random.Random(seed)
    sizes = {f"f{n}.py": rng.randint(0, 30) for n in range(rng.randint(1, 3))}
    base = {path: list(_lines(rng, size)) for path, size in sizes.items()}
    human = _changes(rng, sizes)
    arm = _changes(rng, sizes, like=human)
    assert score(human, arm, base_text=base) == reference_score(human, arm, base)

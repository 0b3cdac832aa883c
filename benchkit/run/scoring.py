"""The score stage: the arm's diff against the human reference, read and parsed by a
thread while the checks run, the human's once a process; and the binary files whose
patch a secret's value keeps out."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache, partial
from pathlib import Path, PurePosixPath

from benchkit.bench.sites import Coverage, FileChange, parse_diff, score
from benchkit.gate.tampering import Tampered, sections_of, tampered
from benchkit.records import SiteResult
from benchkit.run.plan import Plan
from benchkit.workspace.git import binary_changes, diff, file_lines, file_text
from benchkit.workspace.repository import Repository

Ahead = tuple[str, "Future[tuple[FileChange, ...]]"]  # a tree, and its diff parsed ahead
PatchAhead = tuple[str, "Future[str]"]  # a tree, and its patch read ahead


@cache
def _human_change(repo: Repository) -> tuple[FileChange, ...]:
    """The human reference's diff, parsed once for every pilot on the same commits."""
    return parse_diff(diff(repo.mirror, repo.base_sha, repo.human_sha))


@cache
def human_patch(repo: Repository) -> str:
    """The human reference's diff with context, as the report shows it beside the arm's."""
    return diff(repo.mirror, repo.base_sha, repo.human_sha, context=3, binary=True)


@cache
def _base_lines(repo: Repository, path: str) -> list[str] | None:
    return file_lines(repo.mirror, repo.base_sha, path)


_PARSER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-diffs")


def _arm_change(repo_dir: Path, base: str, tree: str) -> tuple[FileChange, ...]:
    return tuple(parse_diff(diff(repo_dir, base, tree)))


def human_ahead(repo: Repository) -> None:
    """The human's diff, read and parsed by a thread from the pilot's start, while its
    stages wait on their processes (once a process: it is cached)."""
    _PARSER.submit(_human_change, repo)
    _PARSER.submit(human_patch, repo)


def parse_ahead(
    repo: Repository, git_dir: Path, tree: str, secrets: list[str]
) -> tuple[Ahead, PatchAhead | None]:
    """The arm's diff, read and parsed by a thread while the checks run, and its patch
    (unless a secret's value may have to be left out of it): the score stage then
    mostly scores."""
    change = (tree, _PARSER.submit(_arm_change, git_dir, repo.base_sha, tree))
    if any(secrets):
        return change, None
    patch = partial(diff, context=3, binary=True)
    return change, (tree, _PARSER.submit(patch, git_dir, repo.base_sha, tree))


def human_paths(repo: Repository) -> list[str]:
    """Every path the human reference changed: old and new names."""
    change = _human_change(repo)
    return sorted({p for c in change for p in (c.old_path, c.new_path) if p is not None})


def arm_change(
    repo: Repository, repo_dir: Path, tree: str, ahead: Ahead | None = None
) -> tuple[FileChange, ...]:
    """The arm's diff, parsed (ahead, when it was for the same tree)."""
    if ahead is not None and ahead[0] == tree:
        return ahead[1].result()
    return _arm_change(repo_dir, repo.base_sha, tree)


def tampering(repo_dir: Path, base: str, tree: str, arm: Sequence[FileChange]) -> Tampered:
    """The files of the arm's diff that are tests, test configuration or CI (see
    `benchkit.gate.tampering`), and what the arm did to each."""

    def sections_changed(path: str) -> bool:
        name = PurePosixPath(path).name
        old, new = file_text(repo_dir, base, path), file_text(repo_dir, tree, path)
        return bool(sections_of(name, old) != sections_of(name, new))

    return tampered(((c.old_path, c.new_path) for c in arm), sections_changed)


def score_arm(p: Plan, repo_dir: Path, tree: str, arm: Sequence[FileChange]) -> Coverage:
    repo = p.repository
    return score(
        _human_change(repo),
        arm,
        exclude=p.bench.file.sites.exclude,
        base_text=lambda path: _base_lines(repo, path),
    )


MOST_STEPS = 200  # commits scored one by one to tell which first covered a site


def covered_by_steps(p: Plan, repo_dir: Path, shas: Sequence[str]) -> list[frozenset[int]]:
    """The sites the arm's tree at each of its commits covers (base to that commit)."""
    base = p.repository.base_sha
    covered = []
    for sha in shas:
        found = score_arm(p, repo_dir, sha, _arm_change(repo_dir, base, sha))
        covered.append(frozenset(s.site.index for s in found.sites if s.covered))
    return covered


def site_results(coverage: Coverage) -> tuple[SiteResult, ...]:
    return tuple(
        SiteResult(
            site=s.site.index,
            file=s.site.file,
            kind=s.site.kind,
            start=s.site.start,
            length=s.site.length,
            covered=s.covered,
            matched=s.matched,
        )
        for s in coverage.sites
    )


def with_secret(repo_dir: Path, base: str, tree: str, secrets: list[str]) -> list[str]:
    """The binary files the arm changed that hold a secret's value (redacting a binary
    patch, compressed as it is, cannot find it)."""
    if not any(secrets) or tree == base:
        return []
    return [
        path
        for path in binary_changes(repo_dir, base, tree)
        if any(s and s in (file_text(repo_dir, tree, path) or "") for s in secrets)
    ]

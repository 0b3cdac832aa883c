"""The same test command on both sides of a change: `benchkit ab`.

The identical command runs at the base and at the head, each in a fresh worktree of
the same repository, `repeat` times per side. Recorded in the store's `ab` table
(one row per side and repeat) and rendered as a markdown table for a PR body: per
side its sha, passed, failed, skipped and duration (min and median over repeats),
whether the duration changed (only when the repeats say it is real: the medians
differ by more than a factor and the two sides' repeats do not overlap, as asv's
`compare --factor` asks), then the tests whose outcome flipped between the sides
(these need a JUnit report). `broke()` names the tests that went from passing to
failing: `benchkit ab --fail-on-flip` exits 1 on any.
"""

from __future__ import annotations

import math
import shlex
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchkit.analysis.markdown import markdown_table
from benchkit.change.testrun import CommandRun, bench_environment, run_at
from benchkit.errors import UsageError
from benchkit.store.schema import SCHEMA_VERSION
from benchkit.store.store import Store
from benchkit.workspace.repository import mirror_repository, resolve_ref

SIDES = ("base", "head")
FACTOR = 1.1  # a duration change smaller than this is never called one
FAILING = ("failed", "error")


def duration_change(base: Sequence[float], head: Sequence[float], factor: float = FACTOR) -> str:
    """Whether the head's duration differs from the base's, said only when it is real:
    the medians differ by more than `factor` and no repeat of one side falls within
    the other's range. Pure."""
    if min(base) <= 0:
        return "not judged: the base took no time"
    ratio = statistics.median(head) / statistics.median(base)
    said = f"head {ratio:.2f}x base"
    if len(base) < 2 or len(head) < 2:
        return f"{said}: not judged, one run a side (--repeat 3 or more to tell)"
    if ratio > factor and min(head) > max(base):
        return f"{said}: slower (above {factor:g}x, and the repeats do not overlap)"
    if ratio < 1 / factor and max(head) < min(base):
        return f"{said}: faster (below 1/{factor:g}, and the repeats do not overlap)"
    return f"{said}: no change shown (within {factor:g}x, or the repeats overlap)"


@dataclass(frozen=True, kw_only=True)
class Flip:
    test: str
    base: str
    head: str


@dataclass(frozen=True, kw_only=True)
class AbResult:
    ab_id: str
    command: tuple[str, ...]
    refs: Mapping[str, str]
    runs: Mapping[str, tuple[CommandRun, ...]]  # side -> one run per repeat
    factor: float = FACTOR

    def sha(self, side: str) -> str:
        return self.runs[side][0].sha

    def flips(self) -> list[Flip]:
        """Tests whose outcome differs between the sides (first repeat of each)."""
        base, head = (self.runs[s][0].outcomes() for s in SIDES)
        return [
            Flip(test=t, base=base.get(t, "absent"), head=head.get(t, "absent"))
            for t in sorted(set(base) | set(head))
            if base.get(t, "absent") != head.get(t, "absent")
        ]

    def broke(self) -> list[Flip]:
        """The tests that passed at the base and fail (or error) at the head."""
        return [f for f in self.flips() if f.base == "passed" and f.head in FAILING]

    def unjudged(self) -> list[str]:
        """Each side whose tests cannot be judged, and why, by its first repeat that
        cannot (`CommandRun.unjudged`); a head whose report names no test, where some
        passed at base, too. A gate on flips cannot pass then: what passed at base
        may not run at head."""
        base = self.runs["base"][0]
        passed = sum(c.outcome == "passed" for c in base.cases or ())
        said = []
        for side in SIDES:
            for run in self.runs[side]:
                why = run.unjudged(empty=side == "head" and passed > 0)
                if why is None:
                    continue
                if side == "head" and base.cases is not None:
                    why += f"; {passed} test{'' if passed == 1 else 's'} passed at base"
                said.append(f"{side}'s tests cannot be judged {why}")
                break
        return said

    def duration(self) -> str:
        """Whether the duration changed, by `duration_change`."""
        if any(r.not_found for side in SIDES for r in self.runs[side]):
            return "not judged: a side's command did not run"
        base, head = ([r.duration_s for r in self.runs[s]] for s in SIDES)
        return duration_change(base, head, self.factor)

    def to_markdown(self) -> str:
        rows = []
        for side in SIDES:
            runs = self.runs[side]
            times = [r.duration_s for r in runs]
            first = runs[0]
            rows.append(
                [
                    side,
                    first.sha[:12],
                    _n(first.passed),
                    _n(first.failed),
                    _n(first.errors),
                    _n(first.skipped),
                    _n(first.exit_code),
                    f"{min(times):.2f} s / {statistics.median(times):.2f} s",
                    first.python or "none found",
                ]
            )
        header = ["side", "sha", "passed", "failed", "errors", "skipped", "exit"]
        header += ["duration (min / median)", "python"]
        text = f"`{shlex.join(self.command)}`, {len(self.runs['base'])} run(s) a side\n\n"
        text += markdown_table(header, rows)
        text += f"\n\nDuration: {self.duration()}."
        errors = [
            f"- {side}: {message}"
            for side in SIDES
            for message in self.runs[side][0].error_messages()
        ]
        if errors:
            text += "\n\nTests that could not run:\n\n" + "\n".join(errors)
        problems = [
            f"- {side}: {r.problem}" for side in SIDES for r in self.runs[side][:1] if r.problem
        ]
        if problems:
            text += "\n\nReports that could not be read:\n\n" + "\n".join(problems)
        if any(r.cases is None for side in SIDES for r in self.runs[side]):
            return text + "\n\nFlipped tests: no JUnit report, so none can be named."
        flips = self.flips()
        if not flips:
            return text + "\n\nFlipped tests: none."
        return (
            text
            + "\n\nFlipped tests:\n\n"
            + markdown_table(["test", "base", "head"], [[f.test, f.base, f.head] for f in flips])
        )

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def ab_rows(result: AbResult) -> list[dict[str, Any]]:
    flips = [{"test": f.test, "base": f.base, "head": f.head} for f in result.flips()]
    return [
        {
            "ab_id": result.ab_id,
            "schema_version": SCHEMA_VERSION,
            "command": shlex.join(result.command),
            "side": side,
            "ref": result.refs[side],
            "sha": run.sha,
            "repeat": i + 1,
            "passed": run.passed,
            "failed": run.failed,
            "errors": run.errors,
            "python": run.python,
            "skipped": run.skipped,
            "duration_s": run.duration_s,
            "exit_code": run.exit_code,
            "source": run.source,
            "flips": flips if side == "head" else [],
        }
        for side in SIDES
        for i, run in enumerate(result.runs[side])
    ]


def ab(
    base: str,
    head: str,
    command: Sequence[str],
    *,
    repeat: int = 1,
    repo: Path | str = ".",
    store: Store | Path | str | None = None,
    bench: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    factor: float = FACTOR,
) -> AbResult:
    """Run the identical test command at `base` and at `head` of the repository, each
    in a fresh worktree, `repeat` times a side, with the caller's environment (or the
    environment of `bench`); record it in the store's `ab` table. A duration change
    is called only past `factor` and with repeats that do not overlap."""
    if not (math.isfinite(factor) and factor >= 1):
        raise UsageError("factor", "", f"is a finite number of at least 1, not {factor}")
    if repeat < 1:
        raise UsageError("repeat", "", f"must be at least 1, not {repeat}")
    repo, store = Path(repo), Store.at(store).checked()
    mirror = mirror_repository(repo)
    shas = {
        "base": resolve_ref(mirror, repo, base, "--base"),
        "head": resolve_ref(mirror, repo, head, "--head"),
    }
    environment, bench_env = bench_environment(bench, mirror, shas["base"], shas["head"])
    env = {**bench_env, **(env or {})}  # the bench's [env], then the caller's
    ab_id = f"ab-{datetime.now(UTC):%Y%m%dT%H%M%S}-{shas['head'][:8]}"
    logs = store.make().artifacts(ab_id)  # the inputs all checked first
    runs = {
        side: tuple(
            run_at(
                mirror,
                shas[side],
                command,
                logs=logs,
                name=f"{side}-{i + 1}",
                env=env,
                environment=environment,
            )
            for i in range(repeat)
        )
        for side in SIDES
    }
    result = AbResult(
        ab_id=ab_id,
        command=tuple(command),
        refs={"base": base, "head": head},
        runs=runs,
        factor=factor,
    )
    write_ab(store, result)
    store.compact_when_due()
    return result


def write_ab(store: Store, result: AbResult) -> None:
    """The comparison's rows in the store's `ab` table."""
    store.write_rows("ab", result.ab_id, ab_rows(result))

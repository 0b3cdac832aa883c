"""The same test command on both sides of a change: `benchkit ab`.

The identical command runs at the base and at the head, each in a fresh worktree of
the same repository, `repeat` times per side. Recorded in the store's `ab` table
(one row per side and repeat) and rendered as a markdown table for a PR body: per
side its sha, passed, failed, skipped and duration (min and median over repeats),
then the tests whose outcome flipped between the sides (these need a JUnit report).
"""

from __future__ import annotations

import shlex
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchkit.analysis.markdown import markdown_table
from benchkit.change.testrun import CommandRun, bench_environment, run_at
from benchkit.store.parquet import store_path, write_table
from benchkit.store.schema import SCHEMA_VERSION, table_schema
from benchkit.workspace.git import mirror_repository, resolve_ref

SIDES = ("base", "head")


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
                    f"{min(times):.2f} s / {statistics.median(times):.2f} s",
                    first.python or "none found",
                ]
            )
        header = ["side", "sha", "passed", "failed", "errors", "skipped"]
        header += ["duration (min / median)", "python"]
        text = f"`{shlex.join(self.command)}`, {len(self.runs['base'])} run(s) a side\n\n"
        text += markdown_table(header, rows)
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
    store: Path | str | None = None,
    bench: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> AbResult:
    """Run the identical test command at `base` and at `head` of the repository, each
    in a fresh worktree, `repeat` times a side, with the caller's environment (or the
    environment of `bench`); record it in the store's `ab` table."""
    repo, store = Path(repo), store_path(store)
    mirror = mirror_repository(repo)
    shas = {
        "base": resolve_ref(mirror, repo, base, "--base"),
        "head": resolve_ref(mirror, repo, head, "--head"),
    }
    environment, bench_env = bench_environment(bench, mirror, shas["base"], shas["head"])
    env = {**bench_env, **(env or {})}  # the bench's [env], then the caller's
    ab_id = f"ab-{datetime.now(UTC):%Y%m%dT%H%M%S}-{shas['head'][:8]}"
    logs = store / "artifacts" / ab_id
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
        ab_id=ab_id, command=tuple(command), refs={"base": base, "head": head}, runs=runs
    )
    write_ab(store, result)
    return result


def write_ab(store: Path, result: AbResult) -> None:
    """The comparison's rows in the store's `ab` table."""
    write_table(store, "ab", result.ab_id, ab_rows(result), table_schema("ab"))

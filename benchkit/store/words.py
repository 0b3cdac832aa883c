"""A published table's own words, read as runs' statuses where they can be.

A `ci` cell (`1 pass 0 fail (fork PR)`) gives its run a `ci_status` where it reads as
one; an `outcome` cell (`no: service error`) that says the run did not succeed makes
its status `failed` (kind `outcome`), unless the file gives a status. An import reads
its file a block at a time: `Words` reads each block and counts what it read, and its
notes say how, over the whole file.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import polars as pl

from benchkit.gate.ci import CI_STATUSES, status_of_words

NOT_SUCCEEDED = re.compile(
    r"^\W*(no|not|false|fail(ed|ure|s)?|errors?|unresolved|crash(ed|es)?|timed?[ _-]?out)\b",
    re.I,
)
SUCCEEDED = re.compile(r"^\W*(yes|ok|true|pass(ed|es)?|success(ful)?|resolved|verified)\b", re.I)
OUTCOME_RULE = (
    "an outcome whose first word is no, not, false, fail(ed, ure), error, unresolved, "
    "crash(ed) or timeout says the run did not succeed"
)


class Words:
    """How a table's words are read, given its columns (`given`): `ci` as
    `ci_status` where the file gives none, `outcome` as the run's status (a run's own
    status cell wins). `read` a block at a time; `notes` once all are read."""

    def __init__(self, given: Sequence[str]) -> None:
        self.ci = "ci" in given and "ci_status" not in given
        self.outcome = "outcome" in given
        self.ci_read: Counter[str | None] = Counter()  # a status, or None: unread
        self.outcomes: Counter[str] = Counter()  # failed, decided, unread, own

    def read(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The block with its words read."""
        if self.ci:
            frame = self._ci_status(frame)
        if self.outcome:
            frame = self._outcome_status(frame)
        return frame

    def _ci_status(self, frame: pl.DataFrame) -> pl.DataFrame:
        read = [status_of_words(t) if t else None for t in frame["ci"]]
        self.ci_read.update(r for t, r in zip(frame["ci"], read, strict=True) if t)
        return frame.with_columns(ci_status=pl.Series(read, dtype=pl.String))

    def _outcome_status(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The status `failed` (kind `outcome`) of each run whose outcome says it did
        not succeed, `ok` of the others, where the file gives the run no status of its
        own; a failure kind or detail the file gives is kept."""
        texts = [str(t) if t is not None else "" for t in frame["outcome"]]
        own = frame["status"] if "status" in frame.columns else pl.Series([None] * len(texts))
        decided = own.is_null()
        failed = pl.Series([bool(NOT_SUCCEEDED.match(t)) for t in texts]) & decided
        details = [f"the table's outcome: {t}" for t in texts]
        said = {
            "failure_kind": pl.when(failed).then(pl.lit("outcome")),
            "failure_detail": pl.when(failed).then(pl.Series(details, dtype=pl.String)),
        }
        status = pl.when(failed).then(pl.lit("failed")).otherwise(pl.lit("ok"))
        self.outcomes["failed"] += int(failed.sum())
        self.outcomes["decided"] += int(decided.sum())
        self.outcomes["own"] += int((~decided).sum())
        self.outcomes["unread"] += sum(
            1
            for t, f, d in zip(texts, failed, decided, strict=True)
            if d and t and not f and not SUCCEEDED.match(t)
        )
        return frame.with_columns(
            (pl.coalesce(pl.col(c), value) if c in frame.columns else value).alias(c)
            for c, value in said.items()
        ).with_columns(status=pl.coalesce(pl.Series(own, dtype=pl.String), status))

    def notes(self) -> list[str]:
        """How the words were read: each status and how many read as it; the outcome
        rule, and how many runs it failed of those it decided."""
        notes = []
        if self.ci:
            counted = [(s, self.ci_read[s]) for s in CI_STATUSES if self.ci_read[s]]
            said = ", ".join(f"{s} {n}" for s, n in counted) or "none of them"
            note = f"ci: the text kept as `ci`, read as ci_status: {said}"
            unread = self.ci_read[None]
            notes.append(note + (f"; {unread} read as no status (null)" if unread else ""))
        if self.outcome:
            n = self.outcomes
            note = (
                f"outcome: {n['failed']} of {n['decided']} runs did not succeed, status "
                f"failed (kind outcome): {OUTCOME_RULE}"
            )
            if n["unread"]:
                note += f"; {n['unread']} outcome{'s' if n['unread'] != 1 else ''} read as "
                note += "neither: status ok"
            if n["own"]:
                note += f"; {n['own']} with a status of the file's own: kept"
            notes.append(note)
        return notes

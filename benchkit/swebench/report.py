"""SWE-bench's report files of a run set, field for field: a `report.json` for each
instance a model completed (`<out>/<model>/<instance>/report.json`) and the run
summary of each model (`<out>/<model>.<set>.json`, schema version 2), so that what
reads SWE-bench's output reads benchkit's.

Of a model's runs in the set (the latest attempt of each): an instance it has no
prediction for is incomplete; an empty patch is `empty_patch`, never run; a run
whose arm ended well is completed (resolved when graded FULL, else unresolved; a
test run that left nothing to grade is completed with
`patch_successfully_applied` false, as SWE-bench's unparseable log is); any other
run (a patch that did not apply, an environment that could not be built) is an
error; an error of the machine's making (its environment, its disk, an interrupt) is
an infra failure as well, its failure kind the reason (SWE-bench 5.0 guesses these
from the logs; benchkit knows them). The instances are those of the set's runs of
SWE-bench benches.

Beside SWE-bench's fields, one key of benchkit's own, `benchkit`: the same resolved
count over the instances `benchkit bench validate` found valid (their gold patch
passing every run), and which were invalid or not validated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchkit.bench.bench_file import load_bench
from benchkit.bench.lock import lock_path, read_lock
from benchkit.errors import BenchkitError, UsageError
from benchkit.records import DEFAULT_SET
from benchkit.store.atomic import replace_whole
from benchkit.store.query import latest_attempts, runs
from benchkit.store.store import Store

Row = Mapping[str, Any]
SCHEMA_VERSION = 2
NOT_SUBMITTED = "no_prediction"
# failure kinds of the machine's making (SWE-bench 5.0's infra failures, by their reason)
INFRA_FAILURES = frozenset({"environment", "disk", "worktree", "verify", "crashed", "interrupted"})


@dataclass(frozen=True)
class Written:
    """What `report` wrote: each model's run summary (its file and its fields) and
    its instances' reports."""

    summaries: dict[str, tuple[Path, dict[str, Any]]]
    reports: list[Path]

    def lines(self) -> list[str]:
        """A line for each model: its figures (over the valid instances too, where
        some were validated) and its summary's file."""
        found = []
        for model, (path, said) in self.summaries.items():
            own = said["benchkit"]
            valid = (
                f" ({own['resolved_valid_instances']} of {own['valid_instances']} valid)"
                if own["validated_instances"]
                else ""
            )
            found.append(
                f"{model}: {said['resolved_instances']} of {said['total_instances']} "
                f"resolved{valid}, {said['empty_patch_instances']} empty patch(es), "
                f"{said['error_instances']} error(s): {path}"
            )
        return found


def model_of(row: Row) -> str:
    """The name a run's model goes by in SWE-bench's files (`/` as `__`): the model
    its prediction or pilot names, else its arm."""
    return str(row.get("model") or row["arm"]).replace("/", "__")


def instance_report(row: Row) -> dict[str, Any]:
    """SWE-bench's `report.json` of one completed run."""
    graded = row.get("swebench_status") is not None
    entry: dict[str, Any] = {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": graded,
        "resolved": row.get("swebench_status") == "FULL",
        "infra_failure": False,
    }
    if graded:
        entry["tests_status"] = {
            "FAIL_TO_PASS": {
                "success": list(row.get("swebench_f2p_success") or []),
                "failure": list(row.get("swebench_f2p_failure") or []),
            },
            "PASS_TO_PASS": {
                "success": list(row.get("swebench_p2p_success") or []),
                "failure": list(row.get("swebench_p2p_failure") or []),
            },
            "FAIL_TO_FAIL": {"success": [], "failure": []},
            "PASS_TO_FAIL": {"success": [], "failure": []},
        }
    return {row["swebench_instance"]: entry}


def summary(
    rows: Sequence[Row], instances: Sequence[str], valid: Mapping[str, bool] | None = None
) -> dict[str, Any]:
    """SWE-bench's run summary of one model's runs over the set's instances, and under
    `benchkit` the same over the valid ones (`valid`: the validated instances, whether
    each is valid; the others were not validated)."""
    by_instance = {str(r["swebench_instance"]): r for r in rows}
    submitted = {i for i, r in by_instance.items() if r.get("failure_kind") != NOT_SUBMITTED}
    empty = {i for i in submitted if by_instance[i].get("failure_kind") == "empty_patch"}
    completed = {i for i in submitted - empty if by_instance[i].get("status") == "ok"}
    resolved = {i for i in completed if by_instance[i].get("swebench_status") == "FULL"}
    errors = submitted - empty - completed
    reasons = {  # where the machine, not the patch, failed: known, never guessed from a log
        i: str(kind)
        for i in sorted(errors)
        if (kind := by_instance[i].get("failure_kind")) in INFRA_FAILURES
    }
    return {
        "total_instances": len(instances),
        "submitted_instances": len(submitted),
        "completed_instances": len(completed),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(completed - resolved),
        "infra_failure_instances": len(reasons),
        "ambiguous_failure_instances": 0,
        "empty_patch_instances": len(empty),
        "error_instances": len(errors),
        "completed_ids": sorted(completed),
        "incomplete_ids": sorted(set(instances) - submitted),
        "empty_patch_ids": sorted(empty),
        "submitted_ids": sorted(submitted),
        "resolved_ids": sorted(resolved),
        "unresolved_ids": sorted(completed - resolved),
        "infra_failure_ids": sorted(reasons),
        "ambiguous_failure_ids": [],
        "failure_reasons": reasons,
        "error_ids": sorted(errors),
        "schema_version": SCHEMA_VERSION,
        "benchkit": _over_valid(instances, resolved, valid or {}),
    }


def _over_valid(
    instances: Sequence[str], resolved: set[str], valid: Mapping[str, bool]
) -> dict[str, Any]:
    """The second denominator (SWE-bench-Live's advice): the instances whose gold patch
    passed every validation run (`benchkit bench validate`)."""
    kept = sorted(i for i in instances if valid.get(i))
    return {
        "validated_instances": sum(i in valid for i in instances),
        "valid_instances": len(kept),
        "resolved_valid_instances": len(resolved & set(kept)),
        "invalid_ids": sorted(i for i in instances if valid.get(i) is False),
        "unvalidated_ids": sorted(i for i in instances if i not in valid),
    }


def validity(rows: Sequence[Row]) -> dict[str, bool]:
    """Each instance whose bench has a current lock file (`benchkit bench validate`,
    made of the bench file and commits its runs had): whether it is valid."""
    found: dict[str, bool] = {}
    for row in rows:
        instance = str(row["swebench_instance"])
        if instance in found:
            continue
        try:
            lock = read_lock(lock_path(load_bench(Path(str(row["bench_path"])))))
        except BenchkitError:  # the bench moved, or its lock is not one: not validated
            continue
        made_of = (row.get("bench_digest"), row.get("base_sha"), row.get("human_sha"))
        if lock is not None and (lock.bench_digest, lock.base_sha, lock.human_sha) == made_of:
            found[instance] = lock.invalid is None
    return found


def report(
    run_set: str = DEFAULT_SET,
    *,
    out: str | Path = "swebench-report",
    store: Store | Path | str | None = None,
) -> Written:
    """Write SWE-bench's report files of the run set `run_set` into `out`: each
    model's run summary and a `report.json` for each instance it completed. Raises a
    `UsageError` when the set holds no run of a SWE-bench bench."""
    table = latest_attempts(runs(store, run_set=run_set).lazy()).collect()
    if "swebench_instance" in table.columns:
        table = table.filter(table["swebench_instance"].is_not_null())
    if table.is_empty() or "swebench_instance" not in table.columns:
        raise UsageError("--set", run_set, "holds no run of a SWE-bench instance")
    rows: Sequence[Row] = table.sort("trial").to_dicts()
    instances = sorted({str(r["swebench_instance"]) for r in rows})
    valid = validity(rows)
    by_model: dict[str, list[Row]] = {}
    for row in rows:
        if row["trial"] == rows[0]["trial"]:  # SWE-bench's files: one run per instance
            by_model.setdefault(model_of(row), []).append(row)
    folder = Path(out)
    written = Written(summaries={}, reports=[])
    for model, own in sorted(by_model.items()):
        for row in own:
            if row.get("status") == "ok" and row.get("failure_kind") is None:
                path = folder / model / str(row["swebench_instance"]) / "report.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                replace_whole(path, json.dumps(instance_report(row), indent=4) + "\n")
                written.reports.append(path)
        path = folder / f"{model}.{run_set}.json"
        folder.mkdir(parents=True, exist_ok=True)
        said = summary(own, instances, valid)
        replace_whole(path, json.dumps(said, indent=4) + "\n")
        written.summaries[model] = path, said
    return written

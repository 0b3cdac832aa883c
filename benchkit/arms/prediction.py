"""The `prediction:FILE` arm: the bench's SWE-bench instance as a model predicted it.

FILE holds SWE-bench predictions (`benchkit.bench.swebench`); the arm replays the
`model_patch` of the bench's instance (`[swebench] instance_id`, else the bench's
name) and is the model `model_name_or_path` names. An empty or null patch is not run:
the run is recorded as failed, `empty_patch`; an instance the file has no
prediction for likewise, `no_prediction`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar

from benchkit.arms.builtin import apply_text
from benchkit.arms.protocol import Arm, ArmContext, ArmOutcome
from benchkit.bench.bench_file import Bench
from benchkit.bench.swebench import Prediction, read_predictions
from benchkit.errors import ArmError, UsageError


@dataclass(frozen=True)
class Predicted(Arm):
    file: Path
    instance_id: str
    prediction: Prediction | None
    name: str
    file_model: str = ""  # the model the file's predictions name, when they name one

    instant: ClassVar[bool] = True

    @property
    def model(self) -> str:
        """The prediction's model; for an instance the file has none for, the file's."""
        return self.prediction.model_name_or_path if self.prediction else self.file_model

    @property
    def made_of(self) -> bytes:
        """The instance's prediction alone: another instance's changing in the file
        leaves this run's unit as it was; its own changing grades it again."""
        p = self.prediction
        text = "" if p is None else f"{p.model_name_or_path}\0{p.model_patch or ''}"
        return hashlib.sha256(f"{self.instance_id}\0{text}".encode()).digest()

    def run(self, context: ArmContext) -> ArmOutcome:
        log = context.logs / "arm.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        p = self.prediction
        if p is None:
            detail = f"{self.file.name} has no prediction for {self.instance_id}"
            log.write_text(f"{detail}\n")
            return ArmOutcome(
                ok=False, failure_kind="no_prediction", detail=detail, retryable=False
            )
        if p.empty:
            detail = f"the prediction of {p.model_name_or_path} for {self.instance_id} is empty"
            log.write_text(f"{detail}: not run\n")
            return ArmOutcome(ok=False, failure_kind="empty_patch", detail=detail, retryable=False)
        what = f"the prediction of {p.model_name_or_path} for {self.instance_id}"
        return apply_text(context, p.model_patch or "", what)


@cache
def _predictions(path: Path, stamp: tuple[int, int]) -> dict[str, Prediction]:
    """A predictions file's rows by instance id, read once while it is unchanged."""
    return {p.instance_id: p for p in read_predictions(path)}


def predicted(bench: Bench, argument: str) -> Arm:
    """The arm of `prediction:FILE` on a bench made from a SWE-bench instance."""
    given = f"prediction:{argument}"
    if not argument:
        raise ArmError(given, "", "prediction needs a file: prediction:<predictions file>")
    path = Path(argument).expanduser().resolve()
    if not path.is_file():
        raise ArmError(given, "", f"no such predictions file: {argument}")
    instance = bench.file.swebench.instance_id if bench.file.swebench else bench.name
    stat = path.stat()
    try:
        found = _predictions(path, (stat.st_mtime_ns, stat.st_size))
    except UsageError as exc:
        raise ArmError(exc.file, exc.field, exc.message) from None
    models = {p.model_name_or_path for p in found.values()}
    return Predicted(
        file=path,
        instance_id=instance,
        prediction=found.get(instance),
        name=given,
        file_model=next(iter(models)) if len(models) == 1 else "",
    )

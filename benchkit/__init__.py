"""benchkit: rerun AI coding tools on benchmark repositories, measure them against the
change a human made, and keep every figure in Parquet.

    import benchkit as bk
    runs = bk.pilot("demo", arm="replay:agent-a", trials=3)
    bk.compare(runs)       # or bk.compare(bk.runs()): means with 95% intervals
    bk.runs()              # polars DataFrame; .to_pandas() for pandas

The names below load on first use, so `import benchkit` starts fast and pulls no
polars, pyarrow, numpy or matplotlib until a function needs them.
"""

import importlib as _importlib
import typing as _typing

from benchkit.errors import (
    ArmError,
    BenchError,
    BenchkitError,
    ImportFileError,
    LaunchError,
    RefError,
    SetError,
    StoreError,
    UsageError,
)

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "AbResult": "benchkit.change.ab",
    "Bench": "benchkit.bench.bench_file",
    "Budget": "benchkit.analysis.budget",
    "Comparison": "benchkit.analysis.compare",
    "Markdown": "benchkit.analysis.markdown",
    "Paired": "benchkit.analysis.compare",
    "PilotSpec": "benchkit.records",
    "ProbeResult": "benchkit.change.probe",
    "Run": "benchkit.records",
    "ab": "benchkit.change.ab",
    "benches": "benchkit.bench.find",
    "budget": "benchkit.analysis.budget",
    "compact": "benchkit.store.store",
    "compare": "benchkit.analysis.compare",
    "evidence": "benchkit.analysis.evidence",
    "experiment": "benchkit.bench.experiment_file",
    "flips": "benchkit.analysis.compare",
    "import_runs": "benchkit.store.imports",
    "list_arms": "benchkit.arms.registry",
    "paired": "benchkit.analysis.compare",
    "pilot": "benchkit.run.launch",
    "plot": "benchkit.analysis.plots",
    "probe": "benchkit.change.probe",
    "recover": "benchkit.run.recovery",
    "report": "benchkit.analysis.report",
    "rerun": "benchkit.run.launch",
    "runs": "benchkit.store.query",
    "scan": "benchkit.store.query",
    "swebench": "benchkit.swebench",  # a module: bk.swebench.benches, ...
    "table": "benchkit.store.query",
    "validate": "benchkit.run.validate",
}

if _typing.TYPE_CHECKING:
    from benchkit import swebench
    from benchkit.analysis.budget import Budget, budget
    from benchkit.analysis.compare import Comparison, Paired, compare, flips, paired
    from benchkit.analysis.evidence import evidence
    from benchkit.analysis.markdown import Markdown
    from benchkit.analysis.plots import plot
    from benchkit.analysis.report import report
    from benchkit.arms.registry import list_arms
    from benchkit.bench.bench_file import Bench
    from benchkit.bench.experiment_file import experiment
    from benchkit.bench.find import benches
    from benchkit.change.ab import AbResult, ab
    from benchkit.change.probe import ProbeResult, probe
    from benchkit.records import PilotSpec, Run
    from benchkit.run.launch import pilot, rerun
    from benchkit.run.recovery import recover
    from benchkit.run.validate import validate
    from benchkit.store.imports import import_runs
    from benchkit.store.query import runs, scan, table
    from benchkit.store.store import compact


if not _typing.TYPE_CHECKING:  # to a type checker, the names are the imports above

    def __getattr__(name: str) -> object:
        """A public name, loaded from its module on first use."""
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'benchkit' has no attribute {name!r}")
        loaded = _importlib.import_module(module)
        value = loaded if module == f"{__name__}.{name}" else getattr(loaded, name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return list(__all__)


__all__ = [
    "AbResult",
    "ArmError",
    "Bench",
    "BenchError",
    "BenchkitError",
    "Budget",
    "Comparison",
    "ImportFileError",
    "LaunchError",
    "Markdown",
    "Paired",
    "PilotSpec",
    "ProbeResult",
    "RefError",
    "Run",
    "SetError",
    "StoreError",
    "UsageError",
    "__version__",
    "ab",
    "benches",
    "budget",
    "compact",
    "compare",
    "evidence",
    "experiment",
    "flips",
    "import_runs",
    "list_arms",
    "paired",
    "pilot",
    "plot",
    "probe",
    "recover",
    "report",
    "rerun",
    "runs",
    "scan",
    "swebench",
    "table",
    "validate",
]

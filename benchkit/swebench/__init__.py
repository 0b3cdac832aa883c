"""SWE-bench task sets in, SWE-bench grades out: instances as benches (`benches`),
predictions as arms (`prediction:FILE`, `predictions`), SWE-bench's report files of
a run set (`report`). `import benchkit as bk; bk.swebench.benches(...)`."""

from benchkit.swebench.benches import benches, predictions
from benchkit.swebench.report import report

__all__ = ["benches", "predictions", "report"]

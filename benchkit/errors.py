"""The error family of a user's mistakes.

Every `BenchkitError` is bad input: a bench or arm file, a ref, a store, a file to
import, a value given on the command line or to the API. Each says what is wrong in
one line naming the file (or the option) and the field, and the CLI turns every one
of them into that line and exit status 2, in one place. Any other exception is
benchkit's own fault and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path


class BenchkitError(Exception):
    """Bad input: `<file>: <field>: <message>`, the parts that are known."""

    def __init__(self, file: Path | str, field: str, message: str) -> None:
        self.file = str(file)
        self.field = field
        self.message = message
        super().__init__(": ".join(part for part in (self.file, field, message) if part))

    def __reduce__(self) -> tuple[type[BenchkitError], tuple[str, str, str]]:
        """Pickled by its three parts: a worker's error reaches the launcher whole."""
        return type(self), (self.file, self.field, self.message)


class BenchError(BenchkitError):
    """A bench file that does not validate, or a bench whose repository or refs fail."""


class ArmError(BenchkitError):
    """An arm that names nothing, an arm file that does not validate, a missing value."""


class RefError(BenchkitError):
    """A repository or a ref given to `ab` or `probe` that names no commit."""


class StoreError(BenchkitError):
    """A store folder that cannot be one, or a run id or table that it does not hold."""


class StoreWarning(UserWarning):
    """A store file that could not be read and was skipped (a warning: the rest loads)."""


class ImportFileError(BenchkitError):
    """A file of outside records (a CSV) with a bad column or cell."""


class UsageError(BenchkitError, ValueError):
    """A value given on the command line or to the API that benchkit cannot take."""


class LaunchError(BenchkitError):
    """A launcher that lost its workers: a Ray cluster that stopped answering, a Ray
    worker that died at a pilot."""


class SetError(BenchkitError):
    """A run set asked to go on with units whose bench, arm or benchkit changed."""

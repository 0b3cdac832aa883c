"""The names a user gives (a bench's checks, an arm, a run set): one rule for all."""

from __future__ import annotations

NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"

# names whose `<name>_status` is a `runs` column of benchkit's own (CI's verdict,
# SWE-bench's grade): no check may take them (a test holds this to the schema)
RESERVED_CHECKS = frozenset({"ci", "swebench"})

"""The names a user gives (a bench's checks, an arm, a run set): one rule for all."""

from __future__ import annotations

LONGEST_NAME = 100  # characters: a name is part of file names (255 bytes at most)
NAME = rf"^[A-Za-z0-9][A-Za-z0-9._-]{{0,{LONGEST_NAME - 1}}}$"
NAME_RULE = f"letters, digits, '.', '_' and '-', at most {LONGEST_NAME}"

# names whose `<name>_status` is a `runs` column of benchkit's own (CI's verdict,
# SWE-bench's grade): no check may take them (a test holds this to the schema)
RESERVED_CHECKS = frozenset({"ci", "swebench"})

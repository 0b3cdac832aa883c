"""The names a user gives (a bench's checks, an arm, a run set): one rule for all."""

from __future__ import annotations

NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"

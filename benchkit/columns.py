"""How a record's field is kept in the `runs` table: as one column of its own
(`stored`), as the columns of the record it holds (`part`), or as columns computed
from it (`columns`). The records say it where their fields are declared;
`benchkit.store.schema` reads it."""

from __future__ import annotations

from dataclasses import dataclass

STORED = "benchkit.stored"  # a field's metadata key: how the `runs` table keeps it


@dataclass(frozen=True, kw_only=True)
class ColumnSpec:
    """One column of the `runs` table, as a record declares it: its name, its kind (an
    Arrow type by name, see `benchkit.store.schema.KINDS`) and what it means."""

    name: str
    kind: str
    doc: str


@dataclass(frozen=True, kw_only=True)
class Stored:
    """How a record's field is kept: as one column of its own (`doc`, with a `kind`
    and a `name` other than the field's where given), as the columns of the record it
    holds (`part`), or as columns computed from it (`columns`, filled by
    `benchkit.store.rows`)."""

    doc: str = ""
    kind: str = ""  # "": the field's annotation says it
    name: str = ""  # "": the field's name
    part: bool = False
    columns: tuple[ColumnSpec, ...] = ()


def stored(doc: str, *, kind: str = "", name: str = "") -> dict[str, Stored]:
    """A field kept as one column of the `runs` table, meaning `doc`."""
    return {STORED: Stored(doc=doc, kind=kind, name=name)}


def part() -> dict[str, Stored]:
    """A field holding a record whose stored fields are columns of the `runs` table."""
    return {STORED: Stored(part=True)}


def columns(*specs: tuple[str, str, str]) -> dict[str, Stored]:
    """A field kept as these columns (name, kind, meaning), computed from it."""
    made = tuple(ColumnSpec(name=n, kind=k, doc=d) for n, k, d in specs)
    return {STORED: Stored(columns=made)}

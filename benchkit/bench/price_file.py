"""Price tables (`prices.toml`): US dollars per million tokens, by model.

benchkit bundles one, dated, for the models its agent arms name; `BENCHKIT_PRICES`
names a file of the user's whose models are added to it and win. A table only ever
prices what a tool counted: see `benchkit.arms.cost`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated

from pydantic import Field

from benchkit.bench.files import Strict, validated
from benchkit.errors import ArmError

BUNDLED_PRICES = Path(__file__).resolve().parent.parent / "bundled" / "prices.toml"
PRICES_VARIABLE = "BENCHKIT_PRICES"
DATED = re.compile(r"-(20\d{6}|20\d\d-\d\d-\d\d)$")  # a model snapshot's date suffix
Dollars = Annotated[float, Field(strict=True, ge=0, le=10_000)]  # per million tokens


class Price(Strict):
    """A model's list prices, in US dollars per million tokens."""

    input: Dollars
    cached_input: Dollars | None = None  # None: cache reads cost what input costs
    cache_write: Dollars | None = None  # None: cache writes cost what input costs
    output: Dollars


class PriceFile(Strict):
    """A `prices.toml`: its date (when its prices were read), where they came from,
    and each model's prices."""

    date: dt.date
    source: str = ""
    models: dict[str, Price] = Field(default_factory=dict)


@dataclass(frozen=True)
class PriceTable:
    """The prices a pilot computes costs with: the bundled table, the user's added
    (each `Price` validated as its file was read)."""

    models: dict[str, Price]
    dated: dict[str, str]  # by model: the table it came from, as a run names it

    def find(self, model: str) -> tuple[str, Price] | None:
        """The model's name in the table and its price: by its own name, by its name
        after a provider's prefix (`anthropic/claude-sonnet-4-5`), or without a
        snapshot's date (`claude-sonnet-4-5-20250929`); None: not priced."""
        bare = model.rsplit("/", 1)[-1]
        for name in (model, bare, DATED.sub("", bare)):
            if name in self.models:
                return name, self.models[name]
        return None


NO_PRICES = PriceTable(models={}, dated={})


def _named(path: Path, file: PriceFile) -> str:
    where = "benchkit" if path == BUNDLED_PRICES else path.name
    return f"{where} {file.date.isoformat()}"


@cache
def _table(user: str, _changed: int) -> PriceTable:
    files = [BUNDLED_PRICES, *([Path(user).expanduser()] if user else [])]
    models: dict[str, Price] = {}
    dated: dict[str, str] = {}
    for path in files:
        file = validated(PriceFile, path, ArmError)
        models.update(file.models)
        dated.update(dict.fromkeys(file.models, _named(path, file)))
    return PriceTable(models=models, dated=dated)


def price_table() -> PriceTable:
    """The bundled prices, with those of the file `BENCHKIT_PRICES` names added;
    raises `ArmError` naming the file and the field of a bad one."""
    user = os.environ.get(PRICES_VARIABLE, "")
    try:
        changed = Path(user).expanduser().stat().st_mtime_ns if user else 0
    except OSError:
        changed = -1  # no such file: `validated` says so
    return _table(user, changed)

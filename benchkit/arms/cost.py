"""A cost from tokens, where a tool counts tokens and gives no dollars. Pure.

The cost is the price table's: tokens read uncached at the input price, read from
the cache at the cached price, written to it at the cache-write price, and written
out at the output price; a tool that splits its tokens by model (Gemini CLI) has
each model's priced at its own prices. A model the table does not price, or tokens
the tool did not count, leave the cost missing, with a warning saying why: never a
guess.
"""

from __future__ import annotations

from dataclasses import replace

from benchkit.arm_report import MOST_USD, ArmReport, SessionReport, Tokens
from benchkit.bench.price_file import Price, PriceTable

MILLION = 1_000_000


def dollars(tokens: Tokens, price: Price) -> float | None:
    """What the tokens cost at the price; None when the tool did not count its input
    or its output."""
    if tokens.input is None or tokens.output is None:
        return None
    cached, written = tokens.cached or 0, tokens.cache_write or 0
    uncached = max(tokens.input - cached - written, 0)
    cached_price = price.input if price.cached_input is None else price.cached_input
    write_price = price.input if price.cache_write is None else price.cache_write
    total = (
        uncached * price.input
        + cached * cached_price
        + written * write_price
        + tokens.output * price.output
    )
    return total / MILLION


def _unpriced(name: str) -> str:
    return (
        f"cost missing: model {name!r} is not in the price table; add its prices to a "
        "file named by BENCHKIT_PRICES (see `benchkit prices`)"
    )


def costed(report: ArmReport, model: str, table: PriceTable) -> tuple[ArmReport, str | None]:
    """The report with its cost computed from its tokens when the tool gave none (and
    its sessions' alike), or why it cannot be: at the prices of the model the tool
    names, else of the pilot's model."""
    if report.cost_usd is not None or not report.tokens.given:
        return report, None
    if len(report.model_tokens) > 1:
        return _by_model(report, table)
    name = report.model or model  # the model that ran, where the tool says; never a stand-in
    if not name:
        return report, (
            "cost missing: the tool counted tokens, but neither it nor the pilot names a model"
        )
    found = table.find(name)
    if found is None:
        return report, _unpriced(name)
    name, price = found
    cost = dollars(report.tokens, price)
    if cost is None:
        return report, "cost missing: the tool did not count both its input and output tokens"
    if cost > MOST_USD:
        return report, f"cost missing: its tokens come to ${cost:,.0f}, no pilot's cost"
    where = table.dated[name]
    sessions = tuple(_session(s, price, where) for s in report.session_list)
    return replace(report, cost_usd=cost, price_table=where, session_list=sessions), None


def _by_model(report: ArmReport, table: PriceTable) -> tuple[ArmReport, str | None]:
    total, tables = 0.0, []
    for name, tokens in report.model_tokens:
        if not (tokens.input or tokens.output):
            continue  # a model that read and wrote nothing costs nothing, priced or not
        found = table.find(name)
        if found is None:
            return report, _unpriced(name)
        cost = dollars(tokens, found[1])
        if cost is None:
            return report, f"cost missing: the tool did not count {name}'s input and output tokens"
        total += cost
        tables.append(table.dated[found[0]])
    if total > MOST_USD:
        return report, f"cost missing: its tokens come to ${total:,.0f}, no pilot's cost"
    where = ", ".join(dict.fromkeys(tables))
    sessions = report.session_list
    if len(sessions) == 1 and sessions[0].cost_usd is None:
        sessions = (replace(sessions[0], cost_usd=total, price_table=where),)
    return replace(report, cost_usd=total, price_table=where, session_list=sessions), None


def _session(session: SessionReport, price: Price, where: str) -> SessionReport:
    if session.cost_usd is not None or not session.tokens.given:
        return session
    cost = dollars(session.tokens, price)
    return session if cost is None else replace(session, cost_usd=cost, price_table=where)

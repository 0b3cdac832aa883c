"""A cost from tokens: the price table's arithmetic, a model it does not price, and
the user's table over benchkit's. Data in, data out (and a real prices.toml)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from benchkit.arm_report import ArmReport, SessionReport, Tokens
from benchkit.arms.cost import costed, dollars
from benchkit.bench.files import validated
from benchkit.bench.price_file import BUNDLED_PRICES, Price, PriceFile, price_table
from benchkit.errors import ArmError

CODEX = Tokens(input=24763, cached=24448, output=450)


def test_the_bundled_table_is_dated_and_prices_the_bundled_arms_models() -> None:
    file = validated(PriceFile, BUNDLED_PRICES, ArmError)
    assert isinstance(file.date, dt.date)
    for model in ("gpt-5-codex", "gemini-2.5-pro", "claude-sonnet-4-5"):  # codex, gemini-cli, ...
        assert model in file.models


def test_a_codex_run_priced_token_kind_by_token_kind() -> None:
    price = Price(input=1.25, cached_input=0.125, output=10.0)
    # 315 uncached at $1.25, 24448 cached at $0.125, 450 out at $10, per million
    assert dollars(CODEX, price) == pytest.approx((315 * 1.25 + 24448 * 0.125 + 450 * 10) / 1e6)
    unpriced_cache = Price(input=1.25, output=10.0)  # no cached price: input's
    assert dollars(CODEX, unpriced_cache) == pytest.approx((24763 * 1.25 + 450 * 10) / 1e6)
    writes = Price(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)
    claude = Tokens(input=6212, cached=5000, cache_write=1200, output=450)
    assert dollars(claude, writes) == pytest.approx(
        (12 * 3 + 5000 * 0.3 + 1200 * 3.75 + 450 * 15) / 1e6
    )
    assert dollars(Tokens(input=10), price) is None  # no output counted: no cost


def test_a_run_with_tokens_and_no_cost_gets_one_computed_with_its_table() -> None:
    session = SessionReport(session=0, tokens=CODEX)
    report = ArmReport(tokens=CODEX, sessions=1, session_list=(session,))
    table = price_table()
    priced, why = costed(report, "gpt-5-codex", table)
    assert why is None
    assert priced.cost_usd == pytest.approx(0.00794975)
    assert (priced.cost_source, priced.price_table) == ("computed", table.dated["gpt-5-codex"])
    assert str(priced.price_table).startswith("benchkit ")
    assert priced.session_list[0].cost_usd == priced.cost_usd
    assert priced.session_list[0].cost_source == "computed"


def test_a_reported_cost_is_never_recomputed() -> None:
    report = ArmReport(cost_usd=0.0731, tokens=CODEX)
    assert costed(report, "gpt-5-codex", price_table()) == (report, None)


def test_a_model_not_in_the_table_leaves_the_cost_missing_and_says_why() -> None:
    report = ArmReport(tokens=CODEX)
    same, why = costed(report, "gpt-9-unpriced", price_table())
    assert same.cost_usd is None and same.cost_source == "missing"
    assert why == (
        "cost missing: model 'gpt-9-unpriced' is not in the price table; add its prices to "
        "a file named by BENCHKIT_PRICES (see `benchkit prices`)"
    )
    named = ArmReport(tokens=CODEX, model="gpt-5-codex")  # the tool's own word first
    assert costed(named, "gpt-9-unpriced", price_table())[0].cost_source == "computed"
    assert costed(ArmReport(tokens=CODEX), "", price_table())[1] == (
        "cost missing: the tool counted tokens, but neither it nor the pilot names a model"
    )


def test_tokens_split_by_model_are_priced_each_at_its_own() -> None:
    pro, flash = (
        Tokens(input=24000, cached=5000, output=1300),
        Tokens(input=1200, cached=0, output=40),
    )
    report = ArmReport(
        tokens=pro + flash,
        model="gemini-2.5-pro",
        model_tokens=(("gemini-2.5-pro", pro), ("gemini-2.5-flash", flash)),
        session_list=(SessionReport(session=0, tokens=pro + flash),),
    )
    priced, why = costed(report, "", price_table())
    assert why is None
    pro_cost = (19000 * 1.25 + 5000 * 0.125 + 1300 * 10) / 1e6
    flash_cost = (1200 * 0.30 + 40 * 2.50) / 1e6
    assert priced.cost_usd == pytest.approx(pro_cost + flash_cost)
    assert priced.session_list[0].cost_usd == priced.cost_usd
    unpriced = ArmReport(tokens=pro, model_tokens=(("gemini-2.5-pro", pro), ("gemini-x", pro)))
    assert "model 'gemini-x' is not in the price table" in (
        costed(unpriced, "", price_table())[1] or ""
    )


def test_the_users_table_adds_models_and_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "prices.toml"
    mine.write_text(
        'date = 2026-11-30\nsource = "our contract"\n'
        '[models."gpt-5-codex"]\ninput = 1.0\ncached_input = 0.1\noutput = 8.0\n'
        '[models."in-house-coder"]\ninput = 0.5\noutput = 1.5\n'
    )
    monkeypatch.setenv("BENCHKIT_PRICES", str(mine))
    table = price_table()
    assert table.dated["gpt-5-codex"] == "prices.toml 2026-11-30"
    assert table.dated["gemini-2.5-pro"].startswith("benchkit ")
    priced, _ = costed(ArmReport(tokens=CODEX), "gpt-5-codex", table)
    assert priced.cost_usd == pytest.approx((315 * 1.0 + 24448 * 0.1 + 450 * 8.0) / 1e6)
    assert table.find("openrouter/in-house-coder") == (
        "in-house-coder",
        Price(input=0.5, output=1.5),
    )


@pytest.mark.parametrize(
    ("text", "field", "said"),
    [
        ("[models.m]\ninput = 1\noutput = 2\n", "date", "Field required"),
        (
            'date = 2026-11-30\n[models.m]\ninput = "1"\noutput = 2\n',
            "models.m.input",
            "valid number",
        ),
        (
            "date = 2026-11-30\n[models.m]\ninput = -1\noutput = 2\n",
            "models.m.input",
            "greater than or equal",
        ),
        ("date = 2026-11-30\n[models.m]\ninput = 1\n", "models.m.output", "Field required"),
        ("date = 2026-11-30\n[models.m\n", "", "not valid TOML"),
    ],
)
def test_a_bad_price_file_is_one_line_naming_it_and_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, field: str, said: str
) -> None:
    bad = tmp_path / "prices.toml"
    bad.write_text(text)
    monkeypatch.setenv("BENCHKIT_PRICES", str(bad))
    with pytest.raises(ArmError) as caught:
        price_table()
    message = str(caught.value)
    assert message.startswith(f"{bad}: {field + ': ' if field else ''}")
    assert said in message and "\n" not in message


def test_a_model_is_found_by_its_name_its_provider_or_its_snapshot() -> None:
    table = price_table()
    for name in ("claude-sonnet-4-5", "anthropic/claude-sonnet-4-5", "claude-sonnet-4-5-20250929"):
        found = table.find(name)
        assert found is not None and found[0] == "claude-sonnet-4-5", name
    assert table.find("sonnet") is None  # an alias: no price of its own, never a guess


def test_tokens_past_any_pilots_cost_leave_it_missing() -> None:
    huge = ArmReport(tokens=Tokens(input=10**13, output=10**13))
    same, why = costed(huge, "gpt-5-codex", price_table())
    assert same.cost_usd is None
    assert why is not None and why.startswith("cost missing: its tokens come to $")

"""The bundled agent arms end to end: `claude-code`, `codex`, `aider`, `gemini-cli`
and `opencode` as a matrix on the demo bench, with the fake programs of
tests/fakes/agents first on PATH (each takes its tool's flags and prints its
tool's output): each run's cost and where it came from, its tokens, its session and
the files it edited, aider's commits, the transcripts kept; `compare --by arm` over
them; the failure shapes of each tool, recorded as their kinds."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

import benchkit
from tests.conftest import ROOT, a_cache, with_checks_at_base
from tests.helpers import benchkit_cli, benchkit_in_process

pytestmark = pytest.mark.slow

FAKES = ROOT / "tests" / "fakes" / "agents"
AGENTS = ["claude-code", "codex", "aider", "gemini-cli", "opencode"]
KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-fake-0c1d2e3f",
    "OPENAI_API_KEY": "sk-proj-fake-4a5b6c7d",
    "GEMINI_API_KEY": "AIza-fake-8e9f0a1b",
}
EDITED = ["src/tally/money.py", "src/tally/tax.py"]


def _with_fakes(mp: pytest.MonkeyPatch, keys: dict[str, str]) -> None:
    mp.setenv("PATH", f"{FAKES}{os.pathsep}{os.environ['PATH']}")
    for name in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "CODEX_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OPENROUTER_API_KEY",
        "DEEPSEEK_API_KEY",
    ):
        mp.delenv(name, raising=False)
    for name, value in keys.items():
        mp.setenv(name, value)


@pytest.fixture(scope="module")
def matrix(
    tmp_path_factory: pytest.TempPathFactory, shared_environments: Path
) -> Iterator[tuple[Path, str, str]]:
    """The five agent arms as one matrix through the CLI, then codex with a model the
    price table lacks: the store, and the second pilot's output. The demo's lint alone
    is checked: what this file tests is each tool's report, not the checks (the demo's
    five are test_demo's), and the five took 1.8 CPU-seconds a pilot. In the sandbox
    where there is one (`auto`), as a user's pilots run: without it, each pilot copied
    the demo's environment (hard links) and read all of it again after."""
    store = tmp_path_factory.mktemp("agents-store")
    arms = [a for arm in AGENTS for a in ("--arm", arm)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, shared_environments)))
        _with_fakes(mp, KEYS)
        five = benchkit_cli(
            "pilot",
            "--bench",
            "demo",
            *arms,
            "--max-cost",
            "1",
            "--checks",
            "lint",
            "--quiet",
            store=store,
        )
        assert five.returncode == 0, five.stderr
        unpriced = benchkit_cli(
            "pilot",
            "--bench",
            "demo",
            "--arm",
            "codex",
            "--model",
            "gpt-9-unpriced",
            "--checks",
            "lint",
            "--quiet",
            store=store,
        )
        assert unpriced.returncode == 0, unpriced.stderr
        yield store, five.stdout, unpriced.stdout + unpriced.stderr


def _runs(store: Path) -> dict[str, dict[str, object]]:
    runs = benchkit.runs(store).filter(pl.col("model") != "gpt-9-unpriced")
    return {str(r["arm"]): r for r in runs.iter_rows(named=True)}


def test_five_agents_each_with_its_cost_and_where_it_came_from(
    matrix: tuple[Path, str, str],
) -> None:
    store, printed, _ = matrix
    runs = _runs(store)
    assert sorted(runs) == sorted(AGENTS)
    assert {r["status"] for r in runs.values()} == {"ok"}
    costs = {arm: (r["cost_usd"], r["cost_source"]) for arm, r in runs.items()}
    assert costs["claude-code"] == (0.0731, "reported")  # its total_cost_usd
    assert costs["aider"] == (0.02, "reported")  # its session's running total
    assert costs["opencode"] == (0.0123, "reported")
    # tokens only: priced by benchkit's table, 315 uncached + 24448 cached in, 450 out
    assert costs["codex"][1] == "computed"
    assert costs["codex"][0] == pytest.approx((315 * 1.25 + 24448 * 0.125 + 450 * 10) / 1e6)
    assert costs["gemini-cli"][1] == "computed"
    assert costs["gemini-cli"][0] == pytest.approx((1900 * 1.25 + 500 * 0.125 + 450 * 10) / 1e6)
    for arm in ("codex", "gemini-cli"):
        assert str(runs[arm]["price_table"]).startswith("benchkit 20")
        assert f"{runs[arm]['cost_usd']:.4f} computed" in printed  # the table says so
    assert runs["claude-code"]["price_table"] is None


def test_tokens_per_run(matrix: tuple[Path, str, str]) -> None:
    runs = _runs(matrix[0])
    tokens = {
        arm: (
            r["input_tokens"],
            r["cached_input_tokens"],
            r["cache_write_tokens"],
            r["output_tokens"],
        )
        for arm, r in runs.items()
    }
    assert tokens == {
        "claude-code": (6212, 5000, 1200, 450),  # 12 uncached + 5000 read + 1200 written
        "codex": (24763, 24448, None, 450),
        "aider": (4800, 1600, 2400, 900),  # two replies: 2.4k sent (800 hit, 1.2k written)
        "gemini-cli": (2400, 500, None, 450),
        "opencode": (2400, 500, 0, 450),  # 1900 uncached + 500 read; 400 out + 50 reasoning
    }
    assert runs["claude-code"]["reported_model"] == "claude-sonnet-4-5-20250929"
    assert runs["gemini-cli"]["reported_model"] == "gemini-2.5-pro"


def test_each_session_with_the_files_it_edited(matrix: tuple[Path, str, str]) -> None:
    store = matrix[0]
    runs = _runs(store)
    arm_of = {r["run_id"]: arm for arm, r in runs.items()}
    sessions = benchkit.table("sessions", store).filter(pl.col("run_id").is_in(list(arm_of)))
    by_arm = {arm_of[r["run_id"]]: r for r in sessions.iter_rows(named=True)}
    assert sorted(by_arm) == sorted(AGENTS)  # one session each
    for arm, session in by_arm.items():
        assert (session["files"], session["files_from"]) == (EDITED, "tool"), arm
        assert session["cost_source"] == runs[arm]["cost_source"]
        assert session["output_tokens"] == runs[arm]["output_tokens"]
    assert by_arm["codex"]["session_id"] == "0199a213-81c0-7800-8aa1-bbab2a035a53"


def test_aiders_commits_are_its_steps_and_its_scratch_is_no_change(
    matrix: tuple[Path, str, str],
) -> None:
    store = matrix[0]
    aider = _runs(store)["aider"]
    commits = benchkit.table("commits", store).filter(pl.col("run_id") == aider["run_id"])
    assert commits.select("step", "files", "session").to_dicts() == [
        {"step": 0, "files": ["src/tally/money.py"], "session": 0},
        {"step": 1, "files": ["src/tally/tax.py"], "session": 0},
    ]
    assert commits["subject"].to_list()[0] == "feat: migrate src/tally/money.py off tally.compat"
    others = benchkit.table("commits", store).filter(pl.col("run_id") != aider["run_id"])
    assert others.height == 0  # the other agents leave their edits uncommitted
    # its repository map's cache is the tool's own: in no diff, no site, no warning
    patch = Path(str(aider["artifacts"]), "agent.patch").read_text()
    assert ".aider" not in patch
    assert aider["sites_unrelated"] == 0 and not aider["ignored_written"]


def test_transcripts_are_kept(matrix: tuple[Path, str, str]) -> None:
    runs = _runs(matrix[0])
    for arm, run in runs.items():
        transcript = Path(str(run["artifacts"]), "logs", "arm.stdout").read_text()
        assert transcript, arm
        for value in KEYS.values():
            assert value not in transcript
    events = Path(str(runs["codex"]["artifacts"]), "logs", "arm.stdout").read_text().splitlines()
    kinds = [json.loads(line)["type"] for line in events]
    assert kinds[0] == "thread.started" and kinds[-1] == "turn.completed"
    assert kinds.count("item.completed") == 5  # reasoning, a command, two edits, its answer


def test_a_model_not_in_the_price_table_shows_no_cost_and_says_why(
    matrix: tuple[Path, str, str],
) -> None:
    store, _, said = matrix
    [run] = benchkit.runs(store).filter(pl.col("model") == "gpt-9-unpriced").to_dicts()
    assert (run["cost_usd"], run["cost_source"], run["input_tokens"]) == (None, "missing", 24763)
    why = (
        "cost missing: model 'gpt-9-unpriced' is not in the price table; add its prices to a "
        "file named by BENCHKIT_PRICES (see `benchkit prices`)"
    )
    assert run["warnings"] == [why]
    assert f"warning: {why}" in said
    row = next(line for line in said.splitlines() if line.startswith(run["run_id"]))
    assert " - " in row  # its cost cell


def test_compare_by_arm_says_which_costs_are_computed_and_which_missing(
    matrix: tuple[Path, str, str],
) -> None:
    store = matrix[0]
    done = benchkit_in_process("compare", "--by", "arm", store=store)
    assert done.returncode == 0, done.stderr
    rows = {
        line.split("|")[1].strip(): line
        for line in done.stdout.splitlines()
        if line.startswith("| ")
    }
    assert set(AGENTS) <= set(rows)
    assert (
        "- cost of gemini-cli: computed from its tokens with the price table benchkit 20"
        in done.stdout
    )
    assert "cost of codex: computed from its tokens with the price table benchkit" in done.stdout
    assert "(1 of 2 runs), an estimate, not a bill." in done.stdout
    assert (
        "- cost of codex: missing for 1 of 2 runs (model 'gpt-9-unpriced' is not in the price "
        "table; add its prices to a file named by BENCHKIT_PRICES (see `benchkit prices`))."
    ) in done.stdout
    assert "cost of claude-code" not in done.stdout  # reported: nothing to say


FAILURES = [
    # (arm, model, keys given, failure kind, what the run says)
    ("claude-code", "budget", KEYS, "budget", "error_max_budget_usd: Exceeded USD budget (1)"),
    ("claude-code", "turn-limit", KEYS, "turn_limit", "error_max_turns"),
    ("codex", "rate-limit", KEYS, "rate_limit", "429 Too Many Requests"),
    ("codex", "gpt-5-codex", {}, "auth", "401 Unauthorized"),
    ("aider", "sonnet", {}, "auth", "litellm.AuthenticationError"),
    ("aider", "rate-limit", KEYS, "rate_limit", "litellm.RateLimitError"),
    ("gemini-cli", "turn-limit", KEYS, "turn_limit", "Reached max session turns"),
    ("gemini-cli", "gemini-2.5-pro", {}, "auth", "FatalAuthenticationError"),
    ("opencode", "anthropic/rate-limit", KEYS, "rate_limit", "Rate limit exceeded"),
    ("codex", "truncated", KEYS, "crash", "the arm exited 137"),
]


@pytest.fixture(scope="module")
def failed(
    tmp_path_factory: pytest.TempPathFactory,
    shared_environments: Path,
    matrix: tuple[Path, str, str],
) -> dict[tuple[str, str, str], dict[str, object]]:
    """Each failure shape of each tool, one pilot each (in this process), in a store
    that holds the matrix's checks at base."""
    store = with_checks_at_base(tmp_path_factory.mktemp("agents-failed"), matrix[0])
    found = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, shared_environments)))
        for arm, model, keys, kind, _ in FAILURES:
            _with_fakes(mp, keys)
            [run] = benchkit.pilot(
                "demo",
                arm=arm,
                model=model,
                max_cost=1.0,
                checks=["lint"],
                store=store,
                progress=False,
            )
            found[(arm, model, kind)] = (
                benchkit.runs(store).filter(pl.col("run_id") == run.run_id).row(0, named=True)
            )
    return found


@pytest.mark.parametrize(("arm", "model", "keys", "kind", "said"), FAILURES)
def test_each_tools_failures_are_recorded_as_their_kind(
    failed: dict[tuple[str, str, str], dict[str, object]],
    arm: str,
    model: str,
    keys: dict[str, str],
    kind: str,
    said: str,
) -> None:
    run = failed[(arm, model, kind)]
    assert (run["status"], run["failure_kind"]) == ("failed", kind)
    assert said in str(run["failure_detail"])
    if model == "truncated":  # the output cut mid-line: a warning, never a traceback
        warnings = run["warnings"]
        assert isinstance(warnings, list)
        assert any("not JSON (truncated?)" in w for w in warnings)
    if kind == "budget":
        assert run["over_budget"] is True and run["cost_usd"] == 1.01


def test_benchkit_arms_lists_each_agent_with_what_it_needs_and_whether_it_is_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _with_fakes(monkeypatch, {"OPENAI_API_KEY": "sk-x"})
    here = benchkit_in_process("arms")
    assert here.returncode == 0, here.stderr
    lines = here.stdout.splitlines()
    for arm in AGENTS:
        [at] = [i for i, line in enumerate(lines) if line.split()[0] == arm]
        assert lines[at + 1].strip().startswith("needs "), arm
    codex = lines[[line.split()[0] for line in lines].index("codex") + 1]
    said = "needs codex on PATH; a key in CODEX_API_KEY | OPENAI_API_KEY (OPENAI_API_KEY set);"
    assert codex.strip() == f"{said} the network"
    monkeypatch.setenv("PATH", os.environ["PATH"].replace(f"{FAKES}{os.pathsep}", ""))
    gone = benchkit_in_process("arms").stdout.splitlines()
    assert (
        "needs codex on PATH (not found);"
        in gone[[line.split()[0] for line in gone].index("codex") + 1]
    )

"""A tool that works in feedback rounds, end to end on the demo bench: the fake
orchestrator of tests/fakes/rounds (mechanical rules, then agent sessions, one commit
a session, each session's cost, kind, verdict and reason in its report). Its sites
are attributed to the sessions that first covered them, and said under the pilot
table; `benchkit budget` replays its recorded sessions under a stopping rule, the
seed's two cases to the cent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

import benchkit
from tests.conftest import ROOT, a_cache
from tests.helpers import benchkit_in_process

pytestmark = pytest.mark.slow

ROUNDS = str(ROOT / "tests" / "fakes" / "rounds" / "rounds.toml")


@pytest.fixture(scope="module")
def rounds(
    tmp_path_factory: pytest.TempPathFactory, shared_environments: Path
) -> Iterator[tuple[Path, dict[str, str]]]:
    """The store, and the run id of each plan: `demo` (rules, then two sessions that
    edit), `thirty` ($0.30 a session on a $1 cap), `tenth` ($0.10 on $0.25)."""
    store = tmp_path_factory.mktemp("rounds-store")
    ids = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, shared_environments)))
        for plan, cap in (("demo", 1.0), ("thirty", 1.0), ("tenth", 0.25)):
            (run,) = benchkit.pilot(
                "demo",
                arm=ROUNDS,
                arm_vars={"plan": plan},
                max_cost=cap,
                checks=["lint"],  # no test: a session's verdict is its plan's, not the gate's
                store=store,
                run_set=plan,
            )
            over = run.report.over_budget  # a run that crossed its cap fails at the budget
            assert (run.status, run.failure_kind) == (
                ("failed", "budget") if over else ("ok", None)
            )
            ids[plan] = run.run_id
        yield store, ids


def test_sites_are_attributed_to_the_sessions_that_first_covered_them(
    rounds: tuple[Path, dict[str, str]],
) -> None:
    store, ids = rounds
    sites = benchkit.table("sites", store).filter(pl.col("run_id") == ids["demo"])
    covered = sites.filter("covered").sort("site")
    assert covered.select("file", "covered_session", "covered_step", "covered_kind").rows() == [
        ("src/tally/invoice.py", 1, 1, "agent"),  # session 2: the import line
        ("src/tally/invoice.py", 2, 2, "agent"),  # session 3: subtotal ...
        ("src/tally/invoice.py", 2, 2, "agent"),  # ... and describe
        ("src/tally/report.py", 0, 0, "mechanical"),  # the rules: compat's import gone
    ]
    assert sites.filter(~pl.col("covered"))["covered_session"].is_null().all()
    commits = benchkit.table("commits", store).filter(pl.col("run_id") == ids["demo"])
    assert commits.sort("step")["session"].to_list() == [0, 1, 2]  # one commit a session
    sessions = benchkit.table("sessions", store).filter(pl.col("run_id") == ids["demo"])
    assert sessions.sort("session").select("kind", "status", "reason").rows() == [
        ("mechanical", "accepted", None),
        ("agent", "rejected", "tests"),
        ("agent", "accepted", None),
    ]
    done = benchkit_in_process("evidence", ids["demo"], "--store", str(store))
    assert done.returncode == 0, done.stderr
    *table, blank, prose = done.stdout.strip().splitlines()
    assert blank == ""
    assert prose == (
        f"- **{ROUNDS}**: the rules covered 1 site, session 2 covered 1, session 3 covered 2."
    )
    assert "| 3: 2 accepted, 1 rejected on tests |" in table[-1]
    assert "| $0.27 on a $1 cap |" in table[-1]
    site = benchkit.report(store, store.parent / "rounds-site", run_set="demo")
    page = (site.parent / "runs" / f"{ids['demo']}.html").read_text()
    assert "the rules covered 1 site, session 2 covered 1, session 3 covered 2" in page
    assert "<td>yes (session 3)</td>" in page and "<td>yes (the rules)</td>" in page


def test_budget_replays_the_recorded_sessions_to_the_cent(
    rounds: tuple[Path, dict[str, str]],
) -> None:
    store, ids = rounds
    thirty = benchkit.runs(store).filter(pl.col("run_id") == ids["thirty"]).row(0, named=True)
    # today's rule: the fourth session started with $0.10 left, crossed the cap, stopped
    assert (thirty["sessions"], thirty["cost_usd"], thirty["over_budget"]) == (4, 1.2, True)
    assert thirty["session_reasons"] == "3 rejected on tests, 1 stopped at the budget"
    done = benchkit_in_process(
        "budget", "--cap", "1", "--rule", "mean", ids["thirty"], "--store", str(store)
    )
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if ids["thirty"] in line)
    assert row.endswith("| 4 | 3 | $0.90 | $1.20 | no | 0 | - |")  # the fourth not started
    done = benchkit_in_process("budget", "--cap", "0.25", ids["tenth"], "--store", str(store))
    row = next(line for line in done.stdout.splitlines() if ids["tenth"] in line)
    assert row.endswith("| 3 | 2 | $0.20 | $0.30 | no | 1 (session 3) | - |")
    done = benchkit_in_process(
        "budget", "--cap", "0.25", "--rule", "none", ids["tenth"], "--store", str(store)
    )
    row = next(line for line in done.stdout.splitlines() if ids["tenth"] in line)
    assert row.endswith("| 3 | 3 | $0.30 | $0.30 | yes | 0 | - |")  # today's: crossed


def test_budget_over_a_run_set_sums_what_the_rule_would_have_changed(
    rounds: tuple[Path, dict[str, str]],
) -> None:
    store, ids = rounds
    done = benchkit_in_process("budget", "--cap", "1", "--rule", "last", "--store", str(store))
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 2026")]
    assert len(rows) == 3
    assert done.stdout.strip().splitlines()[-1] == (
        "Under the last rule on a $1 cap, 3 runs replayed: 9 of 10 sessions started, $1.47 "
        "of $1.77 spent, 0 over the cap (recorded: 1), 0 accepted sessions lost."
    )
    lost = benchkit.budget(benchkit.runs(store), cap=0.05, rule="mean", store=store)
    demo = lost.frame.filter(pl.col("run_id") == ids["demo"]).row(0, named=True)
    # $0.00 for the rules, then $0.12: the third (accepted) session, and its 2 sites, lost
    assert (demo["started"], demo["lost_accepted"], demo["lost_sites"]) == (2, [2], 2)

"""`benchkit report`: a static site of the store, opened in a real headless browser."""

from __future__ import annotations

import html
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import benchkit
import benchkit.analysis.report as report_module
from benchkit.errors import UsageError
from benchkit.records import SECRET_MARK
from benchkit.store.parquet import update_run
from tests.conftest import TinyRepo, a_cache, tiny_repo
from tests.helpers import CHROMIUM, PATIENCE_S, benchkit_in_process, needs_chromium


@dataclass(frozen=True)
class Site:
    """`benchkit report` of a store of two runs (human, noop), made once for the module's
    tests that only read it."""

    out: Path
    rows: list[dict[str, object]]


AGENT = (
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,5 +1,5 @@\n"
    " def add(a, b):\n-    return a + b\n+    return a - b\n \n \n def sub(a, b):\n"
)
"""An agent's change that touches no site of the human's (calc.add, which it breaks)."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, shared_environments: Path) -> Iterator[Site]:
    tmp_path = tmp_path_factory.mktemp("report")
    tiny = tiny_repo(tmp_path)
    store = tmp_path / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, shared_environments)))
        (tiny.bench_dir / "patches" / "agent.patch").write_text(AGENT)
        arms = ["human", "noop", "replay:agent"]
        benchkit.pilot(str(tiny.bench_dir), arm=arms, store=store, sandbox="none")
    out = tmp_path / "site"
    done = benchkit_in_process("report", "--store", str(store), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out / "index.html")
    yield Site(out=out, rows=benchkit.runs(store).to_dicts())


def _open(page: Path, fragment: str = "", width: int = 1400) -> tuple[str, str]:
    """The page's DOM once loaded (at `#fragment`) in a window `width` pixels wide, and
    what the browser said on stderr (a console message is a line holding `CONSOLE`)."""
    assert CHROMIUM is not None
    argv = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr"]
    argv += ["--v=0", f"--window-size={width},1000", "--virtual-time-budget=5000"]
    argv += ["--dump-dom", page.as_uri() + fragment]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE_S)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def test_the_report_holds_every_run_its_figures_and_its_plots(site: Site) -> None:
    out, rows = site.out, site.rows
    index = (out / "index.html").read_text()
    for row in rows:
        assert f'href="runs/{row["run_id"]}.html"' in index
        page = (out / "runs" / f"{row['run_id']}.html").read_text()
        assert f"{row['sites_covered']} of {row['sites_total']} covered" in page
    drawn = sorted(p.name for p in (out / "plots").glob("*.png"))
    assert drawn == ["checks.png", "flaky.png", "wall.png"]
    assert "coverage-cost: " in index and "reports a cost" in index  # said, not drawn
    assert "$0.0000" not in index  # no run reported a cost: none is summed up to $0
    human = next(r for r in rows if r["arm"] == "human")
    page = (out / "runs" / f"{human['run_id']}.html").read_text()
    added = [text for kind, text in _diff_lines(page) if kind == "added"]
    assert added.count("+VERSION = 2") == 2  # the human's hunk, and the arm's beside it
    assert page.count("logs/") >= 2


def test_a_report_written_again_of_one_set_holds_only_that_sets_pages(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    store, out = tmp_path / "store", tmp_path / "site"
    [one] = benchkit.pilot(str(tiny.bench_dir), arm="human", store=store, run_set="s1")
    [two] = benchkit.pilot(str(tiny.bench_dir), arm="noop", store=store, run_set="s2")
    benchkit.report(store, out)
    assert {p.stem for p in (out / "runs").glob("*.html")} == {one.run_id, two.run_id}
    (out / "notes.txt").write_text("mine")  # not the report's: left alone
    benchkit.report(store, out, run_set="s1")
    assert {p.stem for p in (out / "runs").glob("*.html")} == {one.run_id}
    assert (out / "notes.txt").read_text() == "mine"


def test_a_report_of_runs_none_of_which_finished_is_written_whole(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Every run interrupted (or a set still at work): no comparison to show, said so;
    the pages and the index are written all the same."""
    store, out = tmp_path / "store", tmp_path / "site"
    [run] = benchkit.pilot(str(tiny.bench_dir), arm="human", store=store)
    update_run(store, run.run_id, {"status": "interrupted"})
    index = benchkit.report(store, out).read_text()
    assert f'href="runs/{run.run_id}.html"' in index
    assert "no runs to compare: the 1 run given did not finish" in index


def test_a_log_that_is_not_a_file_is_left_out_of_the_report(tiny: TinyRepo, tmp_path: Path) -> None:
    """A run's log replaced by a folder (or anything not a file): the report is still
    written, the other logs linked, that one not."""
    store = tmp_path / "store"
    [run] = benchkit.pilot(str(tiny.bench_dir), arm="human", store=store, sandbox="none")
    logs = sorted((store / "artifacts" / run.run_id / "logs").glob("*.log"))
    assert len(logs) >= 2
    logs[0].unlink()
    logs[0].mkdir()
    out = tmp_path / "site"
    done = benchkit_in_process("report", "--store", str(store), "--out", str(out))
    assert done.returncode == 0, done.stderr
    page = (out / "runs" / f"{run.run_id}.html").read_text()
    assert f"logs/{logs[0].name}" not in page and f"logs/{logs[1].name}" in page


def test_a_log_that_leads_outside_the_store_is_neither_read_nor_copied(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """A run's log made a link to a file elsewhere (or a checks row naming one): the
    report shows none of it and copies none of it."""
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("AWS_SECRET_ACCESS_KEY=not-for-the-report\n")
    store = tmp_path / "store"
    [run] = benchkit.pilot(str(tiny.bench_dir), arm="human", store=store, sandbox="none")
    log = store / "artifacts" / run.run_id / "logs" / "after-test.log"
    log.unlink()
    log.symlink_to(secret)
    out = tmp_path / "site"
    benchkit.report(store, out)
    page = (out / "runs" / f"{run.run_id}.html").read_text()
    assert "not-for-the-report" not in page
    assert "logs/after-test.log" not in page
    copied = [p.read_text() for p in out.rglob("*.txt")]
    assert copied and not any("not-for-the-report" in text for text in copied)


@needs_chromium
def test_the_report_loads_in_a_headless_browser_with_its_images(site: Site) -> None:
    out, rows = site.out, site.rows
    pages = [out / "index.html", *(out / "runs" / f"{r['run_id']}.html" for r in rows)]
    pages += sorted((out / "pairs").glob("*.html"))
    doms = {}
    for page in pages:
        widths = (1400, 800) if page in pages[:2] else (1400,)  # narrow: index, one run
        for width in widths:  # every page fits the window: no sideways scrolling
            dom, said = _open(page, width=width)
            assert 'data-images="ok"' in dom, (page, re.findall(r"data-images=\"[^\"]*\"", dom))
            assert "CONSOLE" not in said and "Failed to load resource" not in said, said[-2000:]
            laid_out = re.search(r'data-width="(\d+)"', dom)
            assert laid_out and int(laid_out[1]) <= width, (page.name, width, laid_out)
        doms[page] = dom
    index = doms[out / "index.html"]
    assert index.count("<img ") == 3
    for row in rows:
        assert str(row["run_id"]) in index
    human = next(r for r in rows if r["arm"] == "human")
    dom = doms[out / "runs" / f"{human['run_id']}.html"]
    verdict = r"<th>verdict</th>\s*<td>pass, 0 regressions; tampered: test_calc.py \(edited\)</td>"
    assert re.search(verdict, dom)  # the human added a test: the page names it


@needs_chromium
def test_the_runs_table_sorts_by_a_column_and_keeps_the_rows_asked_for(site: Site) -> None:
    """The index's own script, run by the browser: sorted by arm twice (descending),
    then only the rows holding `noop` kept."""
    dom, said = _open(site.out / "index.html", "#sort=arm&sort=arm&filter=noop")
    assert "Uncaught" not in said, said[-2000:]
    table = re.search(r"<table data-sort.*?</table>", dom, re.S)
    assert table is not None
    row = r"<tr( hidden=\"\")?><td><a href=\"runs/[^\"]+\">[^<]+</a></td>"
    rows = re.findall(row + r"<td>[^<]*</td><td>([^<]+)</td>", table[0])
    hidden = ' hidden=""'
    assert rows == [(hidden, "replay:agent"), ("", "noop"), (hidden, "human")], rows
    assert 'data-order="down">arm</th>' in table[0]


def test_a_page_per_pair_of_arms_pairs_them_and_names_the_flips(site: Site) -> None:
    """Three arms in one set: three pair pages, linked from the index; the human and
    the agent that broke `add` flip on the bench, each run behind it linked."""
    index = (site.out / "index.html").read_text()
    pages = sorted(p.name for p in (site.out / "pairs").glob("*.html"))
    assert pages == [
        "default--human--noop.html",
        "default--human--replay-agent.html",
        "default--noop--replay-agent.html",
    ]
    for name in pages:
        assert f'href="pairs/{name}"' in index
    page = (site.out / "pairs" / "default--human--replay-agent.html").read_text()
    text = _visible(page)
    assert "human against replay:agent" in text
    assert "coverage 1 100.0% inconclusive: 1 pair cannot reach" in text  # one: no interval
    assert "human passes, replay:agent fails 1" in text
    runs = {str(r["arm"]): str(r["run_id"]) for r in site.rows}
    flip = rf"<td>tiny</td><td>pass</td><td>fail</td><td><a href=\"../runs/{runs['human']}.html\""
    assert re.search(flip, page), page[page.index("<h2>Flips</h2>") :]
    assert f'href="../runs/{runs["replay:agent"]}.html"' in page
    noop = _visible((site.out / "pairs" / "default--human--noop.html").read_text())
    assert "No bench's verdict differs between the two arms." in noop


def test_a_run_whose_arm_kept_its_session_shows_it_turn_by_turn_its_secret_redacted(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake agent streams its session as `claude -p --output-format stream-json`
    does, and echoes its key as a careless tool would: the page has the instruction,
    the assistant's message with its tokens, the tool call and its result folded, the
    session's end with its cost; the key nowhere in the site."""
    plan = tmp_path / "plan.json"
    edit = {"file": "calc.py", "old": "return a - b", "new": "return b - a"}
    plan.write_text(json.dumps({"cost_per_turn": 0.02, "edits": [edit]}))
    key = "sk-fake-0123456789abcdef"
    monkeypatch.setenv("FAKE_AGENT_API_KEY", key)
    store, out = tmp_path / "store", tmp_path / "site"
    [run] = benchkit.pilot(
        str(tiny.bench_dir), arm="fake-agent", executor="stream", max_cost=1,
        arm_vars={"plan": str(plan)}, store=store, sandbox="none",
    )  # fmt: skip
    benchkit.report(store, out)
    page = (out / "runs" / f"{run.run_id}.html").read_text()
    turns = page[page.index("<h2>Transcript</h2>") :]
    said = re.findall(
        r'<li class="turn [a-z-]+"><details( open)?><summary><b>([a-z ]+)</b>([^<]*)', turns
    )
    assert said == [
        (" open", "instruction", ""),
        (" open", "assistant", " · 1,200 in (996 cached) · 300 out"),
        ("", "tool call", " · Edit"),
        ("", "tool result", ""),
        (" open", "end", " · 1,200 in (996 cached) · 300 out · $0.02"),
    ], said
    assert "Add mul() to calc and bump VERSION." in turns  # what benchkit told the tool
    assert "old_string:\nreturn a - b\nnew_string:\nreturn b - a" in turns  # not JSON
    assert f"Made 1 edits. (key {SECRET_MARK})" in turns
    assert 'href="' + f'{run.run_id}/logs/arm.stdout.txt">The whole output' in turns
    for written in out.rglob("*"):
        assert written.is_dir() or key not in written.read_text(errors="replace"), written


def test_pages_written_by_forked_workers_are_the_pages_written_here(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `PAGES_APART` runs the pages are written by a worker a core: the same
    pages, byte for byte (but the time written); a worker that fails is said."""
    store = Path(str(site.rows[0]["artifacts"])).parent.parent
    here, apart = tmp_path / "here", tmp_path / "apart"
    report_module.report(store, here)
    monkeypatch.setattr(report_module, "PAGES_APART", 1)
    report_module.report(store, apart)
    pages = sorted(p.name for p in (here / "runs").glob("*.html"))
    assert pages == sorted(p.name for p in (apart / "runs").glob("*.html")) and len(pages) == 3
    for name in pages:
        one, two = ((s / "runs" / name).read_text() for s in (here, apart))
        assert re.sub("written [^<]*", "", one) == re.sub("written [^<]*", "", two), name
    blocked = tmp_path / "blocked"
    (blocked / "runs" / pages[0]).mkdir(parents=True)  # a folder where a page goes
    with pytest.raises(UsageError, match=r"1 of \d page writers failed \(exit 2\)"):
        report_module.report(store, blocked)
    monkeypatch.setattr(report_module, "PAGES_APART", 1000)  # written here: said the same
    with pytest.raises(UsageError, match=rf"{pages[0]}: --out: Is a directory"):
        report_module.report(store, blocked)


def _diff_lines(page: str) -> list[tuple[str, str]]:
    """Each diff line of the page: its kind, and its text as read (its base number, its
    sign, its code, without the spans that colour it)."""
    kinds = r'<span class="(removed|added|context)">'
    found = re.findall(kinds + r"(.*?)(?=" + kinds[:-1] + r"|</pre>)", page, re.S)
    return [(kind, html.unescape(re.sub(r"<[^>]+>", "", text))) for kind, text, _ in found]


def _visible(page: str) -> str:
    """The page's text as a reader sees it: no tags, no attributes (a title holds the
    exact value on purpose)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", page))


def test_a_failing_agents_page_starts_with_its_answer_shows_every_hunk_and_no_repr(
    site: Site,
) -> None:
    agent = next(r for r in site.rows if str(r["arm"]).startswith("replay:"))
    page = (site.out / "runs" / f"{agent['run_id']}.html").read_text()
    summary = page[page.index('<section class="summary">') : page.index("</section>")]
    assert page.index("</section>") < page.index("Sites of the human reference")
    for said in ("fail, 1 regression", "0 of 2 sites covered", "no cap", "tampering"):
        assert said in summary, said
    assert re.search(r"<th>wall</th><td title=\"[\d.]+ s\">(\d+ ms|\d+\.\d s)</td>", summary)
    # every site of the human reference, and the arm's hunk that touches none of them,
    # file by file: those only the human changed first (its test, which is no site)
    files = re.findall(r"<summary><b>([^<]+)</b> · changed by ([^<·]+)</summary>", page)
    human_only = [("test_calc.py", "the human only"), ("util.py", "the human only")]
    assert files == [*human_only, ("calc.py", "both")]
    calc = page[page.index("<summary><b>calc.py</b>") :]
    for number in range(int(str(agent["sites_total"]))):
        assert f"site {number}: missed" in page, number
    arm = calc[calc.index("touches no site") :]
    lines = _diff_lines(arm[: arm.index("</pre>")])
    assert ("removed", "2-    return a + b") in lines and ("added", "+    return a - b") in lines
    assert '<span class="k">return</span>' in arm  # coloured as Python: a keyword
    # the tests under the gate's word, with their full ids; each check's log folded
    regression = r"<td>regression</td><td>test_calc.py::test_add</td><td>[^<]*assert[^<]*</td>"
    assert re.search(regression + r"<td>passed 0 of 1 alone</td>", page)
    checks = page[page.index('<table class="checks">') :]
    assert checks.count("<details><summary>") == 4  # lint and test, at base and after
    assert f'href="{agent["run_id"]}/logs/after-test.log.txt">whole log' in checks
    text = _visible(page)
    assert "test_calc.py::test_add: " in text  # the first failure, not a dict
    for repr_ in ("{'", "['", "': ", "None", "datetime.", "True", "False"):
        assert repr_ not in text, repr_
    assert not re.search(r"\d\.\d{5,}", text), re.search(r".{40}\d\.\d{5,}.{20}", text)
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", text)  # to the second
    spec = page.index("<summary>The whole spec and its timings</summary>")
    assert spec > page.index("<h2>Sessions</h2>")  # folded, last

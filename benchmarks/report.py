"""How long does `benchkit report` take to write the site of 1,000 runs, and how fast
does its index open in a browser?

The runs are REAL pilots on the bundled demo bench (the human, two replayed patches
and the fake agent streaming its session), each then copied under new run ids, its
rows in every table and its artifacts (patches, logs, transcript) with it, until the
store holds `--runs` runs: the pages are as large as real ones, only repeated. Each
copy's arm change gets a comment of its own on one added line, so its hunks are coloured
afresh as a real agent's would be; the human change is the bench's, the same on every
page, as in a real store. The store is then compacted, as a pilot command leaves a store
of more than 64 runs' own files in a table.

Printed: the seconds `benchkit report` took in a fresh process (target: under 10 s
for 1,000 runs), and, in headless Chromium, the milliseconds from navigation to the
load event of the index (target: under 2 s) and of one run page.

    .venv/bin/python benchmarks/report.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import benchkit as bk
from benchkit.store.compaction import compact

ARMS = ["human", "replay:agent-a", "replay:agent-b", "fake-agent"]
TABLES = ("runs", "checks", "tests", "sessions", "sites", "commits", "ci")


def real_runs(store: Path) -> list[str]:
    """The demo's pilots, one per arm: their run ids."""
    runs = bk.pilot("demo", arm=ARMS[:3], store=store, progress=False)
    runs += bk.pilot(
        "demo", arm="fake-agent", executor="stream", max_cost=1, store=store, progress=False
    )
    return [r.run_id for r in runs]


def _renamed(table: pa.Table, old: str, new: str, store: Path) -> pa.Table:
    """The rows of run `old` as rows of run `new`: its id, and paths into its artifacts."""
    for name in ("run_id", "artifacts", "log_path"):
        if name in table.column_names:
            values = [None if v is None else v.replace(old, new) for v in table[name].to_pylist()]
            at = table.column_names.index(name)
            table = table.set_column(at, table.field(name), pa.array(values, pa.string()))
    return table


def copied(store: Path, seeds: list[str], total: int) -> None:
    """Copies of the seed runs until the store holds `total` runs."""
    for n in range(total - len(seeds)):
        old = seeds[n % len(seeds)]
        new = f"20990101T{n // 3600 % 24:02d}{n // 60 % 60:02d}{n % 60:02d}-{n:08x}"
        for name in TABLES:
            source = store / name / f"{old}.parquet"
            if source.exists():
                renamed = _renamed(pq.read_table(source), old, new, store)
                pq.write_table(renamed, store / name / f"{new}.parquet")
        if (store / "artifacts" / old).is_dir():
            shutil.copytree(store / "artifacts" / old, store / "artifacts" / new)
            _own_change(store / "artifacts" / new / "agent.patch", n)


def _own_change(patch: Path, n: int) -> None:
    """Each copy's arm change a little its own (a comment on its first added line), so
    that no page reuses another's coloured hunks, as real agents' changes differ."""
    if patch.is_file():
        lines = patch.read_text().splitlines(keepends=True)
        at = next(
            (i for i, x in enumerate(lines) if x.startswith("+") and not x.startswith("+++")), None
        )
        if at is not None:
            lines[at] = lines[at].rstrip("\n") + f"  # copy {n}\n"
            patch.write_text("".join(lines))


def loaded_ms(chromium: str, page: Path) -> int | None:
    """Milliseconds from navigation to the page's load event, as the page records it."""
    argv = [chromium, "--headless=new", "--no-sandbox", "--disable-gpu"]
    argv += ["--window-size=1400,1000", "--virtual-time-budget=30000", "--dump-dom", page.as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    found = re.search(r'data-loaded-ms="(\d+)"', done.stdout)
    return int(found[1]) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store, out = Path(tmp) / "store", Path(tmp) / "site"
        os.environ.setdefault("BENCHKIT_CACHE", str(Path(tmp) / "cache"))
        seeds = real_runs(store)
        copied(store, seeds, args.runs)
        compact(store)  # as a pilot command leaves a store past 64 runs' own files
        held = bk.runs(store=store).height
        argv = [sys.executable, "-m", "benchkit", "report", "--store", str(store)]
        started = time.perf_counter()
        subprocess.run([*argv, "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
        took = time.perf_counter() - started
        pages = len(list((out / "runs").glob("*.html")))
        print(f"runs in the store: {held} ({len(seeds)} real pilots on demo, the rest copies)")
        print(f"benchkit report: {took:.2f} s for {pages} run pages (target < 10 s)")
        size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6
        print(f"site: {size:.1f} MB; index.html {(out / 'index.html').stat().st_size / 1e6:.2f} MB")
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            print("browser: no chromium on PATH: the index's load time is not measured")
            return
        index = loaded_ms(chromium, out / "index.html")
        page = loaded_ms(chromium, out / "runs" / f"{seeds[-1]}.html")
        print(f"index.html: load event {index} ms after navigation in Chromium (target < 2000)")
        print(f"a run page (the fake agent's, with its transcript): load event {page} ms")


if __name__ == "__main__":
    main()

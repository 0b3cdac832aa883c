"""Nothing outside the tree is read or removed on a path a bench or an arm chose: an arm
that makes the report's folder a link to a folder of the host's (issue 36, case 3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import benchkit
from tests.conftest import TinyRepo
from tests.helpers import PATIENCE_S, needs_bwrap

HOST_REPORT = (
    '<testsuite name="host"><testcase classname="host" name="host_only_7e2a"/></testsuite>\n'
)


@needs_bwrap
def test_a_report_folder_an_arm_links_out_of_the_tree_is_neither_emptied_nor_read(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Seen before: benchkit removed the "stale" report itself, outside the sandbox,
    with the user's rights: the host's `victim/junit.xml` was gone."""
    bench = tiny.bench_dir / "bench.toml"
    bench.write_text(
        bench.read_text().replace('report = "junit.xml"', 'report = ".bench/junit.xml"')
    )
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "junit.xml").write_text(HOST_REPORT)
    arm = tmp_path / "linker.toml"
    arm.write_text(f'name = "linker"\ncommand = "ln -s {victim} .bench && echo y = 2 > new.py"\n')
    store = tmp_path / "store"
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", str(arm), "--store", str(store), "--sandbox", "bwrap"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE_S)
    assert done.returncode in (0, 1), done.stderr
    assert (victim / "junit.xml").read_text() == HOST_REPORT  # still there, unchanged
    [row] = benchkit.runs(store).to_dicts()
    kept = Path(str(row["artifacts"]))
    for written in [*kept.rglob("*"), *store.rglob("*.parquet")]:
        if written.is_file():
            assert b"host_only_7e2a" not in written.read_bytes(), written

"""A build whose benchkit is killed outright (SIGKILL: no `finally` runs) leaves
nothing for ever: the next benchkit stops the build's processes and removes its
temporary folder, as it does for a pilot's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import alive
from tests.workspace.test_environment import env_bench

pytestmark = [pytest.mark.fresh_environments, pytest.mark.slow]

CLI = str(Path(sys.executable).with_name("benchkit"))

BACKEND = """\
import os, time

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with open({pid_file!r}, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(3600)  # a slow build: killed long before
"""


def test_a_build_killed_outright_leaves_no_process_and_no_folder(tmp_path: Path) -> None:
    package, pid_file = tmp_path / "slowpkg", tmp_path / "backend.pid"
    package.mkdir()
    (package / "backend.py").write_text(BACKEND.format(pid_file=str(pid_file)))
    (package / "pyproject.toml").write_text(
        '[project]\nname = "slowpkg"\nversion = "1.0"\n\n'
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    slow = f'kind = "venv"\npython = "3.11"\npackages = ["slowpkg @ file://{package}"]'
    bench = env_bench(tmp_path, slow)
    pilot = subprocess.Popen(
        [CLI, "pilot", "--bench", str(bench), "--arm", "noop", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    backend = 0
    try:
        while not pid_file.exists() or not pid_file.read_text():  # the build under way
            assert pilot.poll() is None, "the pilot ended before its build began"
            time.sleep(0.2)
        backend = int(pid_file.read_text())
        pilot.send_signal(signal.SIGKILL)
        pilot.wait()
        envs = Path(os.environ["BENCHKIT_CACHE"]) / "envs"
        temporary = [p for p in envs.iterdir() if p.is_dir() and "." in p.name]
        assert temporary, "the build's temporary folder"  # what the kill left
        assert alive(backend)

        listed = subprocess.run([CLI, "env", "list"], capture_output=True, text=True)
        assert listed.returncode == 0, listed.stderr
        assert not alive(backend), "the killed build's process runs on"
        assert not [p for p in envs.iterdir() if p.is_dir() and "." in p.name]
    finally:
        for pid in (pilot.pid, backend):
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)

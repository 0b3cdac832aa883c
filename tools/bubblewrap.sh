#!/usr/bin/env bash
# bubblewrap, the sandbox benchkit's pilots run in by default (`--sandbox auto`), from the
# system's packages: installed where this runs as root with apt-get (a container, CI), as
# `make install` and `.ci/run` call it; elsewhere one line says how. Without it, pilots
# run with no sandbox: the arm unconfined, and each pilot copies the bench's environment
# and checks the cache by its bytes when it ends (see docs/reference/environments.md).
# Never fails the install.
command -v "${BENCHKIT_BWRAP:-bwrap}" >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt=(apt-get -q -o DPkg::Lock::Timeout=300)
  "${apt[@]}" install -y bubblewrap >/dev/null 2>&1 \
    || { "${apt[@]}" update >/dev/null 2>&1 && "${apt[@]}" install -y bubblewrap >/dev/null 2>&1; }
  if command -v bwrap >/dev/null 2>&1; then
    echo "bubblewrap installed (apt-get): the pilots' sandbox"
    exit 0
  fi
fi
echo "no bubblewrap: pilots will run without a sandbox (as root: apt-get install bubblewrap)" >&2
exit 0

#!/bin/sh
# bubblewrap, the sandbox benchkit's pilots run in by default (`--sandbox auto`), from
# Debian's packages: installed where this runs as root with apt-get (a container, CI), as
# `make install` (once, as it makes .venv) and `.ci/run` call it; elsewhere one line says
# how. Without it, pilots run with no sandbox: the arm unconfined, and each pilot copies
# the bench's environment and checks the cache by its bytes as it ends (see
# docs/reference/environments.md). Never fails: exit 0 whatever came.
bwrap=${BENCHKIT_BWRAP:-bwrap}
command -v "$bwrap" >/dev/null 2>&1 && exit 0
if [ -n "${BENCHKIT_BWRAP:-}" ]; then
  echo "BENCHKIT_BWRAP names $BENCHKIT_BWRAP, which is not there: pilots will run without a sandbox" >&2
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing bubblewrap (apt-get), the pilots' sandbox"
  apt="apt-get -q -o DPkg::Lock::Timeout=60"
  $apt install -y bubblewrap >/dev/null 2>&1 \
    || { $apt update >/dev/null 2>&1 && $apt install -y bubblewrap >/dev/null 2>&1; }
  command -v bwrap >/dev/null 2>&1 && exit 0
  echo "apt-get could not install bubblewrap: pilots will run without a sandbox" >&2
  exit 0
fi
echo "no bubblewrap: pilots will run without a sandbox (install it: on Debian or Ubuntu, apt-get install bubblewrap)" >&2
exit 0

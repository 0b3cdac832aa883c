#!/usr/bin/env python3
"""A fake orchestrator that works in feedback rounds, as an upgrade tool (uptide)
does: mechanical rules first, then agent sessions, each judged by the repository's
checks, accepted or rejected, and each committed in the worktree. It stops starting
sessions as today's tools do: while anything is left of its cap (`--max-budget-usd`),
so its last session may cross it. No model is called: a plan (JSON) says each
session's kind, cost, verdict, reason and edits.

    rounds.py --plan PLAN --max-budget-usd CAP --report FILE

Its report (JSON): {"cost", "over_budget", "sessions": [{"id", "kind", "status",
"reason", "cost_usd"}]}; exit 0, or 1 when the plan cannot be read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def _commit(message: str) -> None:
    for argv in (["git", "add", "-A"], ["git", "commit", "--quiet", "-m", message]):
        subprocess.run(argv, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(prog="rounds")
    parser.add_argument("--plan", required=True)
    parser.add_argument("--max-budget-usd", type=float, default=None)
    parser.add_argument("--report", required=True)
    args = parser.parse_args()
    try:
        plan = json.loads(Path(args.plan).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        print(f"rounds: cannot read the plan: {exc}", file=sys.stderr)
        return 1
    cap = args.max_budget_usd
    spent, done = 0.0, []
    for n, session in enumerate(plan["sessions"], start=1):
        if n > 1 and cap is not None and cap - spent <= 1e-9:
            break  # today's rule: a session starts while anything is left
        for name, old, new in session.get("edits", []):
            path = Path(name)
            path.write_text(path.read_text().replace(old, new, 1))
        if session.get("edits"):
            _commit(f"session {n}: {session['kind']}")
        spent += session["cost"]
        done.append(
            {
                "id": f"s{n}",
                "kind": session["kind"],
                "status": session["status"],
                "reason": session.get("reason"),
                "cost_usd": session["cost"],
            }
        )
    over = cap is not None and spent > cap + 1e-9
    report = {"cost": round(spent, 6), "over_budget": over, "sessions": done}
    Path(args.report).write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

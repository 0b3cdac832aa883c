"""A fake dependency upgrader, shipped as a packed tarball in the tests.

    python package/upgrade.py --instruction TEXT --max-cost USD --report report.json

It bumps `VERSION` in util.py (its "upgrade"), writes a report.json of its own with
its cost, its sessions (accepted or rejected), feedback rounds and the flaky tests it
saw, and exits 3 when its cost would pass --max-cost.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

SESSIONS: list[dict[str, float | int | str]] = [
    {"id": "s1", "status": "accepted", "cost_usd": 0.2, "turns": 4, "duration_s": 12.5},
    {"id": "s2", "status": "rejected", "cost_usd": 0.1, "turns": 3, "duration_s": 9.0},
    {"id": "s3", "status": "accepted", "cost_usd": 0.07, "turns": 1, "duration_s": 2.25},
]


def main() -> int:
    parser = argparse.ArgumentParser(prog="upgrader")
    parser.add_argument("--instruction", required=True)
    parser.add_argument("--max-cost", type=float, required=True)
    parser.add_argument("--report", required=True)
    args = parser.parse_args()
    cost = round(sum(float(s["cost_usd"]) for s in SESSIONS), 2)
    over = cost > args.max_cost
    report: dict[str, object] = {
        "tool": "upgrader",
        "version": "1.4.0",
        "cost": {"total_usd": cost if not over else args.max_cost, "currency": "USD"},
        "sessions": SESSIONS if not over else SESSIONS[:1],
        "feedback_rounds": 2,
        "flaky_tests": ["test_calc.py"],
        "budget": {"max_usd": args.max_cost, "exceeded": over},
        "error": "max cost exceeded" if over else None,
        "token_seen": bool(os.environ.get("UPGRADER_TOKEN")),
    }
    if not over:
        util = Path("util.py")
        util.write_text(re.sub(r"VERSION = \d+", "VERSION = 2", util.read_text()))
    Path(args.report).write_text(json.dumps(report, indent=2))
    print(f"upgrader: cost ${cost if not over else args.max_cost}", file=sys.stderr)
    return 3 if over else 0


if __name__ == "__main__":
    sys.exit(main())

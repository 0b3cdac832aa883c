#!/usr/bin/env python3
"""A fake agent CLI that behaves like `claude -p` where no real agent can run.

It takes the same flags (`-p PROMPT`, `--output-format text|json|stream-json`,
`--model`, `--max-budget-usd`, `--max-turns`), edits files in the current folder by a
plan, prints the same result message (`type: result`, `subtype`, `is_error`,
`num_turns`, `total_cost_usd`, `duration_ms`, `session_id`) and exits as the real
CLI does: 0 on success, 1 on an error result.

Environment:
  FAKE_AGENT_PLAN   a JSON file: {"cost_per_turn": 0.01, "edits": [{"file", "old", "new"}]}
                    (each edit is one turn; without a plan it edits nothing)
  FAKE_AGENT_MODE   ok (default) | crash | hang | halfway | budget | auth | rate_limit |
                    context | grandchild | stubborn
  FAKE_AGENT_TRACE  a file to write what the agent received (argv, prompt, env names)
  FAKE_AGENT_PIDS   a file to write its pid and its children's pids, one per line
  FAKE_AGENT_API_KEY  its key: like a careless tool, it echoes it in its log and output

Modes: `crash` raises after the first edit; `hang` sleeps after the first edit;
`halfway` makes half the edits, then sleeps, leaving them uncommitted; `budget` runs
over `--max-budget-usd` and stops with a budget error; `auth`, `rate_limit` and
`context` fail as the API does; `grandchild` starts a child process that sleeps;
`stubborn` starts one that ignores SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

API_ERRORS = {
    "auth": 'API Error: 401 {"type":"error","error":{"type":"authentication_error",'
    '"message":"invalid x-api-key"}}',
    "rate_limit": 'API Error: 429 {"type":"error","error":{"type":"rate_limit_error",'
    '"message":"Number of request tokens has exceeded your per-minute rate limit"}}',
    "context": "API Error: 400 prompt is too long: 212043 tokens > 200000 maximum",
}


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fake-agent")
    parser.add_argument("-p", "--print", dest="prompt", required=True)
    parser.add_argument("--output-format", choices=["text", "json", "stream-json"], default="text")
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--max-budget-usd", type=float, default=None)
    parser.add_argument("--max-turns", type=int, default=None)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--permission-mode", default="default")
    return parser.parse_args()


class Session:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.id = str(uuid.uuid4())
        self.started = time.monotonic()
        self.turns = 0
        self.cost = 0.0

    def emit(self, message: dict[str, Any]) -> None:
        if self.args.output_format == "stream-json":
            print(json.dumps(message), flush=True)

    def turn(self, n: int, path: Path, edit: dict[str, Any]) -> None:
        """One turn as Claude Code streams it: the assistant's message (its text, then
        its tool use on a line of its own, each line with the message's id and usage),
        then the tool's result as the user's message."""
        usage = {
            "input_tokens": 4,
            "cache_creation_input_tokens": 200,
            "cache_read_input_tokens": 996,
            "output_tokens": 300,
        }  # 1200 read and 300 written a turn, as the result's usage sums them
        tool = {
            "type": "tool_use",
            "id": f"toolu_{n:02d}",
            "name": "Edit",
            "input": {"file_path": str(path), "old_string": edit["old"], "new_string": edit["new"]},
        }
        for block in ({"type": "text", "text": f"I'll edit {path}."}, tool):
            message = {"id": f"msg_{n:02d}", "type": "message", "role": "assistant"}
            message |= {"model": self.args.model, "content": [block], "usage": usage}
            self.emit({"type": "assistant", "message": message, "session_id": self.id})
        result = {"tool_use_id": tool["id"], "type": "tool_result"}
        result["content"] = f"The file {path} has been updated."
        user = {"role": "user", "content": [result]}
        self.emit({"type": "user", "message": user, "session_id": self.id})

    def result(self, subtype: str, text: str) -> int:
        is_error = subtype != "success"
        message = {
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "duration_ms": int((time.monotonic() - self.started) * 1000),
            "duration_api_ms": int((time.monotonic() - self.started) * 800),
            "num_turns": self.turns,
            "result": text,
            "session_id": self.id,
            "total_cost_usd": round(self.cost, 6),
            "usage": {
                "input_tokens": 4 * self.turns,
                "cache_creation_input_tokens": 200 * self.turns,
                "cache_read_input_tokens": 996 * self.turns,
                "output_tokens": 300 * self.turns,
            },
        }
        if self.args.output_format == "text":
            print(text, flush=True)
        elif self.args.output_format == "json":
            print(json.dumps(message), flush=True)
        else:
            self.emit(message)
        return 1 if is_error else 0


def _trace(args: argparse.Namespace) -> None:
    trace = os.environ.get("FAKE_AGENT_TRACE")
    if trace:
        Path(trace).write_text(
            json.dumps(
                {
                    "argv": sys.argv[1:],
                    "prompt": args.prompt,
                    "model": args.model,
                    "max_budget_usd": args.max_budget_usd,
                    "env": sorted(os.environ),
                    "path": os.environ.get("PATH", ""),
                    "python": sys.executable,
                    "home": os.environ.get("HOME"),
                    "cwd": os.getcwd(),
                }
            )
        )


def _record_pid(pid: int) -> None:
    pids = os.environ.get("FAKE_AGENT_PIDS")
    if pids:
        with open(pids, "a") as handle:
            handle.write(f"{pid}\n")


def _child(stubborn: bool) -> None:
    code = (
        "import signal, time\n"
        + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if stubborn else "")
        + "time.sleep(600)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code])
    _record_pid(child.pid)


def main() -> int:
    args = _args()
    _trace(args)
    _record_pid(os.getpid())
    mode = os.environ.get("FAKE_AGENT_MODE", "ok")
    plan_path = os.environ.get("FAKE_AGENT_PLAN")
    plan = json.loads(Path(plan_path).read_text()) if plan_path else {}
    edits = plan.get("edits", [])
    cost_per_turn = float(plan.get("cost_per_turn", 0.01))
    if mode == "budget":
        cost_per_turn = max(cost_per_turn, (args.max_budget_usd or 1.0) * 0.6)
    session = Session(args)
    session.emit(
        {
            "type": "system",
            "subtype": "init",
            "session_id": session.id,
            "model": args.model,
            "cwd": os.getcwd(),
            "tools": ["Read", "Edit", "Bash"],
        }
    )
    print("fake-agent: working on the task", file=sys.stderr, flush=True)
    key = os.environ.get("FAKE_AGENT_API_KEY")
    if key:  # a careless tool: the key in its debug log, its answer and a file it writes
        print(f"fake-agent: debug: using api key {key}", file=sys.stderr, flush=True)
        Path("agent-notes.txt").write_text(f"authenticated with {key}\n")

    if mode in API_ERRORS:
        print(API_ERRORS[mode], file=sys.stderr, flush=True)
        return session.result("error_during_execution", API_ERRORS[mode])
    if mode in ("grandchild", "stubborn"):
        _child(stubborn=mode == "stubborn")

    stop_after = {"crash": 1, "hang": 1, "halfway": max(1, len(edits) // 2)}.get(mode)
    for n, edit in enumerate(edits, start=1):
        if args.max_turns is not None and session.turns >= args.max_turns:
            return session.result("error_max_turns", "Reached the maximum number of turns")
        if args.max_budget_usd is not None and session.cost + cost_per_turn > args.max_budget_usd:
            session.cost += cost_per_turn  # the turn that went over was paid for
            session.turns += 1
            print(
                f"Error: Exceeded USD budget ({args.max_budget_usd:g})", file=sys.stderr, flush=True
            )
            return session.result(
                "error_max_budget_usd", f"Exceeded USD budget ({args.max_budget_usd:g})"
            )
        path = Path(edit["file"])
        text = path.read_text()
        path.write_text(text.replace(edit["old"], edit["new"], edit.get("count", 1)))
        session.turns += 1
        session.cost += cost_per_turn
        session.turn(n, path, edit)
        if n == stop_after:
            break
    if mode == "crash":
        raise RuntimeError("fake-agent: the tool process crashed")
    if mode in ("hang", "halfway", "grandchild", "stubborn"):
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        while True:
            time.sleep(1)
    done = f"Made {session.turns} edits." + (f" (key {key})" if key else "")
    return session.result("success", done)


if __name__ == "__main__":
    sys.exit(main())

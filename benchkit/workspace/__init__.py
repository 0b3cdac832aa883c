"""Where code runs: every subprocess, git (mirrors, worktrees, diffs), the cache,
commands and their allow-listed environment, and the bench's checks.

The effects that `run` and `arms` both use, below them.
"""

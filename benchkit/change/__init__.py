"""The maintainer's commands: the same test command at two commits (`ab`), and
revert probes of a change's tests (`probe`)."""

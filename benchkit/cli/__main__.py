"""`python -m benchkit.cli`: the same as the `benchkit` command, but that the package's
imports come before the collector is set, and that its process ends as Python ends
it, where `benchkit.__main__` ends a command's at once (`command_ended`)."""

from benchkit.cli import main
from benchkit.workspace.processes import as_command

if __name__ == "__main__":
    as_command()
    main()

"""The `benchkit` command and `python -m benchkit`: the process set up for a command's
life (`as_command`, before any import), then the click group (`benchkit.cli:main`)."""

from benchkit.workspace.processes import as_command


def main() -> None:
    as_command()
    from benchkit.cli import main as command

    command()


if __name__ == "__main__":
    main()

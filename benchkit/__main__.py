"""The `benchkit` command and `python -m benchkit`: the process set up for a command's
life (`as_command`, before any import), then the click group (`benchkit.cli:main`),
whose exit status ends the process at once (`command_ended`)."""

from benchkit.workspace.processes import as_command, command_ended


def main() -> None:
    as_command()
    from benchkit.cli import main as command

    try:
        command()
    except SystemExit as exc:  # as the click group ends every command
        command_ended(exc.code)
        raise


if __name__ == "__main__":
    main()

"""The `benchkit` command and `python -m benchkit`: the process set up for a command's
life (`collects_rarely`, before any import), then the click group (`benchkit.cli:main`)."""

from benchkit.workspace.processes import collects_rarely


def main() -> None:
    collects_rarely()
    from benchkit.cli import main as command

    command()


if __name__ == "__main__":
    main()

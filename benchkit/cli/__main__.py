"""`python -m benchkit.cli`: the same as the `benchkit` command."""

from benchkit.cli import main

if __name__ == "__main__":
    main()

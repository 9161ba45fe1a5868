"""The ``react-docstore`` command of the Python package: the command line of the binary, run
in-process."""

import sys

from ._native import run_cli


def main() -> None:
    """Runs the command line on ``sys.argv`` and exits with its code."""
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(run_cli(["react-docstore", *sys.argv[1:]]))


if __name__ == "__main__":
    main()

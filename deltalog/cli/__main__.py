"""``python -m deltalog.cli``: the same command where the console script is not on PATH."""

from deltalog.cli.main import main

main()

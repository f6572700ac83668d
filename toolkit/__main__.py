"""``python -m toolkit``: the ``distill`` CLI (how ``distill serve`` starts a loop in its own process)."""

from toolkit.cli.main import main

main()

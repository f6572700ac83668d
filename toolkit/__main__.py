"""``python -m toolkit``: the ``distill`` CLI (how ``distill serve`` starts a loop in its own process)."""

from toolkit.cli.entry import main

if __name__ == "__main__":  # not when a spawned worker process imports its parent's main module
    main()

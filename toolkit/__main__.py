"""``python -m toolkit`` runs the ``distill`` CLI."""

from toolkit.cli.main import main

main()

"""The ``distill`` command line: one typer module per stage, thin by design."""

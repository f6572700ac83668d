"""One loop run: strength per generation with intervals, gates, rejected batches, composition, ratings,
and imitation accuracy on the Forge holdout against playing strength.

Open it: ``marimo edit notebooks/loop.py``. Run it as a script (and write its
static report under ``<home>/reports/notebooks/``):
``python notebooks/loop.py -- --home datasets --name demo --report``.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    from toolkit.analysis.notebook import arguments, or_stop, show

    args = arguments(
        {"name": "demo"},
        about="One loop run: strength per generation with intervals, gates, rejected batches, composition, "
        "ratings, and imitation accuracy on the Forge holdout against playing strength.",
        options={"name": "NAME  the loop run (runs/NAME)"},
    )
    # the imports that take time come after the arguments, so --help answers at once
    from toolkit.analysis.report import report_path, write_sections_report
    from toolkit.analysis.sections import loop_sections
    from toolkit.layout import Layout

    home = mo.ui.text(value=args["home"], label="data root", full_width=True)
    name = mo.ui.text(value=args["name"], label="loop run")
    mo.hstack([home, name])
    return Layout, args, home, loop_sections, mo, name, or_stop, report_path, show, write_sections_report


@app.cell
def _(Layout, loop_sections, home, name, or_stop):
    layout = Layout.at(home.value)
    sections = or_stop(loop_sections, layout, name.value)
    return layout, sections


@app.cell
def _(sections, show):
    show(sections)
    return


@app.cell
def _(args, layout, name, report_path, sections, write_sections_report):
    if "report" in args:
        print(write_sections_report(report_path(layout, "loop", name.value), f"Loop run {name.value}", sections))
    return


if __name__ == "__main__":
    app.run()

"""What the lake holds: rows and games by source and generation, dialects, label sources, quarantine, lineage.

Open it: ``marimo edit notebooks/lake.py``. Run it as a script (and write its
static report under ``<home>/reports/notebooks/``):
``python notebooks/lake.py -- --home datasets --report``.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    from toolkit.analysis.notebook import arguments, or_stop, show

    args = arguments(
        {},
        about="What the lake holds: rows and games by source and generation, dialects, label sources, "
        "quarantine, lineage.",
    )
    # the imports that take time come after the arguments, so --help answers at once
    from toolkit.analysis.report import report_path, write_sections_report
    from toolkit.analysis.sections import lake_sections
    from toolkit.layout import Layout

    home = mo.ui.text(value=args["home"], label="data root", full_width=True)
    home
    return Layout, args, home, lake_sections, mo, or_stop, report_path, show, write_sections_report


@app.cell
def _(Layout, home, lake_sections, or_stop):
    layout = Layout.at(home.value)
    sections = or_stop(lake_sections, layout)
    return layout, sections


@app.cell
def _(sections, show):
    show(sections)
    return


@app.cell
def _(args, layout, report_path, sections, write_sections_report):
    if "report" in args:
        print(write_sections_report(report_path(layout, "lake"), f"The lake of {layout.home.name}", sections))
    return


if __name__ == "__main__":
    app.run()

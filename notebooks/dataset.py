"""One dataset build: composition, filters, sample weights, the fixed holdout, actions, features, drift, label issues.

Open it: ``marimo edit notebooks/dataset.py``. Run it as a script (and write its
static report under ``<home>/reports/notebooks/``):
``python notebooks/dataset.py -- --home datasets --name loop-demo --report``.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    from toolkit.analysis.notebook import arguments, or_stop, show

    args = arguments(
        {"name": "loop-demo"},
        about="One dataset build (the latest): composition, filters, sample weights, the fixed holdout, "
        "actions, features, drift against the previous build.",
        options={"name": "NAME  the built dataset (distill datasets list)"},
    )
    # the imports that take time come after the arguments, so --help answers at once
    from toolkit.analysis.report import report_path, write_sections_report
    from toolkit.analysis.sections import dataset_sections
    from toolkit.layout import Layout

    home = mo.ui.text(value=args["home"], label="data root", full_width=True)
    name = mo.ui.text(value=args["name"], label="dataset")
    mo.hstack([home, name])
    return Layout, args, dataset_sections, home, mo, name, or_stop, report_path, show, write_sections_report


@app.cell
def _(Layout, dataset_sections, home, name, or_stop):
    layout = Layout.at(home.value)
    sections = or_stop(dataset_sections, layout, name.value)
    return layout, sections


@app.cell
def _(sections, show):
    show(sections)
    return


@app.cell
def _(args, layout, name, report_path, sections, write_sections_report):
    if "report" in args:
        print(write_sections_report(report_path(layout, "dataset", name.value), f"Dataset {name.value}", sections))
    return


if __name__ == "__main__":
    app.run()

"""What the notebooks (and the dashboard) show, computed once, in the package.

Every function takes a data root (:class:`~toolkit.layout.Layout`) and a
name, reads through the same catalog views, dataset readers and loop records
the CLI uses, and returns polars DataFrames (or small typed models) ready to
print, chart (:mod:`toolkit.analysis.charts`) or write as a static report
(:mod:`toolkit.analysis.report`). A notebook only lays them out.
"""

from toolkit.analysis.errors import NothingToShowError

__all__ = ["NothingToShowError"]

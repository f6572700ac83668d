"""Decision quality: every decision of a build scored (``distill check labels``).

Sits above ``train`` (its k-fold models are the student's BC network) and
``checks``; writes through :mod:`toolkit.datasets.scores`, which everything
below reads.
"""

"""Distill: closed-loop policy distillation for game AI, data first."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("distill")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+local"

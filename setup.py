"""The one compiled part of Distill: the rules' hot loops in C (``toolkit/game/_rules.c``).

Everything else is configured in pyproject.toml. The extension is optional: where it cannot be built (no C
compiler), Distill installs without it and plays its game with the numpy rules, the same games more slowly.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "toolkit.game._rules",
            ["toolkit/game/_rules.c"],
            optional=True,
            # no fused multiply-adds: the rewards and attack values round as numpy's separate products and sums do
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
    ]
)

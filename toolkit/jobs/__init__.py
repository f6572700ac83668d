"""Game jobs fanned out: one interface, three back ends (in-process, a local process pool, Ray).

A game job is split into shards by a plan that depends only on its size
(:func:`plan.shards`), never on the back end or the number of workers, and
each shard is a pure function of (policies, opponents, seed range): the
same shard gives the same games wherever it runs. :func:`run.run_shards`
runs the shards on the back end a :class:`config.BackendConfig` names and
returns their results in shard order, so a job's result is identical
in-process, on the pool, or on Ray with any number of workers.

- ``config.py``: :class:`BackendConfig` (``--backend``, ``--workers``, ``--address``).
- ``plan.py``: :class:`Shard` ranges and their deterministic names.
- ``worker.py``: what a worker keeps between shards (the job's shared inputs, loaded policies).
- ``backends.py``: the three back ends.
- ``run.py``: :func:`run_shards`, the one entry point the stages call.

The stages own their shard functions (``game.simulate``, ``train.evaluate``,
``train.export``, ``ratings``); this package knows nothing of games. Only the
driver writes the catalog: shards write files, the driver ingests them.
"""

"""Engines: Distill's players, evaluations and loop on a lab's own engine, through one versioned wire protocol.

The protocol's messages live beside the contract (:mod:`toolkit.schema.engine`); here are the frames
(:mod:`.wire`), one engine process (:mod:`.process`), the driver that keeps many games in flight
(:mod:`.driver`), Distill's own game served as an engine (:mod:`.builtin`) and the conformance suite
(:mod:`.check`).
"""

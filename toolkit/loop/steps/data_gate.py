"""The lake suite on each new batch: blocking failures reject the generation's data, and so does a batch with no
valid decision (every line of its file was rejected: nothing of it reached the lake to check)."""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.loop.steps.base import StepContext


class DataGateInput(BaseModel):
    batches: list[str]


class DataGateResult(BaseModel):
    passed: bool
    reason: str
    reports: list[str]  # the JSON reports, relative to the data root
    warnings: int = 0


def data_gate_step(ctx: StepContext, step: DataGateInput) -> DataGateResult:
    config = ctx.config
    if not config.data_gate or not step.batches:
        return DataGateResult(
            passed=True, reason="no new batch" if not step.batches else "data gate disabled", reports=[]
        )
    from toolkit.catalog.lake import Lake
    from toolkit.checks.config import CheckConfig, LakeScope
    from toolkit.checks.gate import check_lake

    with Lake.open(ctx.layout).at() as catalog:  # retired meanwhile: out of the lake, not checked
        records = catalog.require_batches(step.batches)
    retired = {b.batch_id for b in records if b.retired}
    empty = [b for b in records if not b.retired and b.rows_valid == 0]
    suite = ctx.resolve(config.data_gate_suite) if config.data_gate_suite else None
    check = CheckConfig(suite=suite, entropy_floor=config.data_gate_entropy_floor)
    checked = [b.batch_id for b in records if b.batch_id not in retired and b.rows_valid > 0]
    reports = [check_lake(ctx.layout, LakeScope(batch=b), check) for b in checked]
    failures = [f"{b.batch_id}: no valid decisions ({b.rows_rejected} lines rejected)" for b in empty]
    failures += [
        f"{r.scope.get('batch')}: {', '.join(x.id for x in r.blocking_failures)}" for r in reports if not r.passed
    ]
    skipped = f"; {len(retired)} retired batch(es) not checked" if retired else ""
    return DataGateResult(
        passed=not failures,
        reason=("; ".join(failures) or f"{len(reports)} batch(es) passed the lake suite") + skipped,
        reports=[r.paths["json"] for r in reports],
        warnings=sum(len(r.warnings) for r in reports),
    )

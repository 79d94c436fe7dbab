"""The findings: pure ``DataFrame -> DataFrame`` transforms over normalised records
(:mod:`spark_reconcile.records`). Each module is one finding; none collects data to the driver,
but for ``divergent``'s fold of a few suspect keys' events (:mod:`~spark_reconcile.findings.fold`).
"""

from spark_reconcile.findings.completeness import completeness
from spark_reconcile.findings.delay import delay_by_bucket, delay_by_flow
from spark_reconcile.findings.divergent import divergent
from spark_reconcile.findings.duplicated import duplicated
from spark_reconcile.findings.fold import key_states
from spark_reconcile.findings.looped import looped
from spark_reconcile.findings.malformed import malformed
from spark_reconcile.findings.missing import absent, missing

__all__ = [
    "absent",
    "completeness",
    "delay_by_bucket",
    "delay_by_flow",
    "divergent",
    "duplicated",
    "key_states",
    "looped",
    "malformed",
    "missing",
]

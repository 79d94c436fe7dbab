"""Thresholds: how many findings a run tolerates before it exits 1 (a nightly alert)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from spark_reconcile.errors import ReconcileError

COUNT_FINDINGS = ("missing", "duplicated", "looped", "divergent", "malformed")
DEFAULTS: dict[str, float] = dict.fromkeys(COUNT_FINDINGS, 0.0)
KNOWN = (*COUNT_FINDINGS, "delay_p99_ms")


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Upper bounds (inclusive): ``missing=0`` tolerates none. ``delay_p99_ms`` applies to the
    p99 of every flow; unset means delay never fails a run."""

    limits: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULTS))

    @classmethod
    def parse(cls, text: str | None) -> Thresholds:
        """``missing=0,duplicated=10,delay_p99_ms=60000`` (unnamed findings keep 0)."""
        limits = dict(DEFAULTS)
        for part in (text or "").split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or name not in KNOWN:
                raise ReconcileError(
                    f"--thresholds {part!r}: use NAME=NUMBER with NAME one of {', '.join(KNOWN)}"
                )
            try:
                limits[name] = float(value)
            except ValueError:
                raise ReconcileError(f"--thresholds {part!r}: {value!r} is not a number") from None
        return cls(limits)

    def crossed(self, counts: Mapping[str, int], delay_p99_ms: Mapping[str, float]) -> list[str]:
        """Human-readable descriptions of every threshold crossed (empty: within thresholds)."""
        out = [
            f"{name}: {counts.get(name, 0)} > {self.limits[name]:g}"
            for name in COUNT_FINDINGS
            if name in self.limits and counts.get(name, 0) > self.limits[name]
        ]
        limit = self.limits.get("delay_p99_ms")
        if limit is not None:
            out += [
                f"delay p99 of {flow}: {p99:g} ms > {limit:g} ms"
                for flow, p99 in sorted(delay_p99_ms.items())
                if p99 > limit
            ]
        return out

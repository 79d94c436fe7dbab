"""Which flows carry an event of a given origin: one spanning tree per origin DC.

For every origin DC O, the flows that carry O's events form the breadth-first tree of the flow
graph rooted at O (neighbours visited in name order, so every process derives the same tree from
the same topology). A flow A→B forwards an event of origin O exactly when A→B is an edge of
tree(O). A tree reaches each DC reachable from O once, by one route, so:

* every DC reachable from O receives each of O's events exactly once (no duplicates from two
  routes, e.g. a record reaching LON both directly and through NYC);
* no event ever returns to a DC it has been in (a tree has no cycles);
* it is the shortest route (fewest hops, hence least delay) from O.

Full mesh: tree(O) is the star O→X, so a flow A→B forwards only events that originated in A.
Hub-and-spoke (both ways): tree(S) is S→hub plus hub→other spokes. A chain A⇄B⇄C: tree(A) is
A→B, B→C. DCs not reachable from O (e.g. hub-and-spoke inbound-only: the spokes never get each
other's events) are reported by :meth:`RouteTable.unreachable`.

The per-record check that the target is not on the record's ``aa-path`` stays as a second,
independent guard (it also stops loops if DCs run different topology files for a while).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from aa.config.model import Flow


class RouteTable:
    """The spanning tree of every origin, as a set of (origin, source, target) triples."""

    def __init__(self, dcs: Iterable[str], flows: Iterable[Flow]) -> None:
        self.dcs = tuple(sorted(dcs))
        out: dict[str, list[str]] = {dc: [] for dc in self.dcs}
        for f in flows:
            out.setdefault(f.source, []).append(f.target)
        self._out = {dc: sorted(set(ts)) for dc, ts in out.items()}
        self._trees = {origin: self._bfs(origin) for origin in self.dcs}
        self._edges = frozenset(
            (origin, a, b) for origin, tree in self._trees.items() for b, a in tree.items()
        )

    def _bfs(self, origin: str) -> dict[str, str]:
        """target -> the DC it receives origin's events from."""
        parent: dict[str, str] = {}
        seen = {origin}
        queue = deque([origin])
        while queue:
            dc = queue.popleft()
            for nxt in self._out.get(dc, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    parent[nxt] = dc
                    queue.append(nxt)
        return parent

    def forwards(self, origin: str, source: str, target: str) -> bool:
        """True when the flow ``source->target`` carries events that originated in ``origin``."""
        return (origin, source, target) in self._edges

    def tree(self, origin: str) -> dict[str, str]:
        """For each DC that receives ``origin``'s events: the DC it receives them from."""
        return dict(self._trees.get(origin, {}))

    def origins_carried(self, source: str, target: str) -> tuple[str, ...]:
        """The origins whose events the flow ``source->target`` forwards (always ``source``)."""
        return tuple(o for o in self.dcs if (o, source, target) in self._edges)

    def unreachable(self) -> dict[str, tuple[str, ...]]:
        """Origin -> the DCs its events never reach (empty when every DC gets everything)."""
        out = {}
        for origin, tree in self._trees.items():
            missing = tuple(dc for dc in self.dcs if dc != origin and dc not in tree)
            if missing:
                out[origin] = missing
        return out

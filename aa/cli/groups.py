"""Which consumer groups a DC knows, to help a user who mistyped ``--group``: the application's
groups with offsets committed there and the groups whose checkpoints the mirror stored there
(aa's own groups left out), and the closest name."""

from __future__ import annotations

import difflib

from aa.checkpoints.task import checkpoint_topic, read_checkpoints
from aa.config import Topology, client_kwargs
from aa.config.names import is_own_group
from aa.failover.plan import PlanError
from aa.failover.plans import sources_into
from aa.offsets.groups import list_groups

SHOWN = 10


async def known_groups(topology: Topology, dc: str) -> list[str]:
    """The application's groups ``dc`` knows: committed offsets there, or checkpoints (their
    positions in another DC, translated into ``dc``), sorted."""
    client = client_kwargs(topology.datacenter(dc))
    found = {g for g in await list_groups(client) if not is_own_group(g)}
    for source in sources_into(topology, dc, None):
        state = await read_checkpoints(checkpoint_topic(topology, source, dc), client)
        found |= {group for group, _, _ in state.latest}
    return sorted(found)


def group_hint(group: str, dc: str, known: list[str]) -> str:
    """``did you mean billing? groups known in NYC: billing, shipping`` (closest first)."""
    near = difflib.get_close_matches(group, known, n=1, cutoff=0.6)
    shown = ", ".join(known[:SHOWN]) + (" ..." if len(known) > SHOWN else "")
    guess = f"did you mean {near[0]}? " if near else ""
    return f"{guess}groups known in {dc} (offsets or checkpoints): {shown or 'none'}"


def unknown_group_error(group: str, dc: str, hint: str) -> PlanError:
    """The refusal to create ``group`` in ``dc`` by committing a plan (a probable typo)."""
    return PlanError(
        f"--group {group}: {dc} has no such group (no committed offsets, no checkpoints); "
        f"{hint}. Check the name, or pass --create-group to create it with this plan; nothing "
        "committed"
    )


async def unknown_group_hint(topology: Topology, dc: str, group: str) -> str | None:
    """The hint for ``group`` when ``dc`` does not know it, else None."""
    known = await known_groups(topology, dc)
    return None if group in known else group_hint(group, dc, known)

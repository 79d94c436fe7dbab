"""Loop prevention and topic selection: which topics a flow copies, under which names, and per
record whether to forward it and with which provenance headers.

* :class:`FlowRouter` — per-flow decisions, implements :class:`aa.protocols.Router`;
* :class:`TopicSelector` / :class:`TopicDecision` — per-topic decisions;
* :class:`RouteTable` — which flows carry which origin's events (one spanning tree per origin);
* :class:`IdentityPolicy`, :class:`PrefixPolicy`, :func:`policy_for` — topic naming
  (:class:`aa.protocols.ReplicationPolicy`).
"""

from aa.policy.naming import IdentityPolicy, PrefixPolicy, is_internal, policy_for
from aa.policy.router import FlowRouter, routers_for
from aa.policy.routes import RouteTable
from aa.policy.selection import TopicDecision, TopicSelector

__all__ = [
    "FlowRouter",
    "IdentityPolicy",
    "PrefixPolicy",
    "RouteTable",
    "TopicDecision",
    "TopicSelector",
    "is_internal",
    "policy_for",
    "routers_for",
]

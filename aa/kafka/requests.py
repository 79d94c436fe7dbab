"""Requests aiokafka's admin client sends for aa where it has no public call (see
:mod:`aa.kafka.private`): cluster metadata with every topic, a request to the controller, and
a request of aa's own to any broker; each with the client's own node choice and retries."""

from __future__ import annotations

from typing import Any

from aiokafka.admin import AIOKafkaAdminClient


async def cluster_metadata(admin: AIOKafkaAdminClient) -> Any:
    """The cluster's metadata (every topic, every broker) as aiokafka's response object."""
    return await admin._get_cluster_metadata()


async def to_controller(admin: AIOKafkaAdminClient, request: Any) -> Any:
    """Send ``request`` to the controller (aiokafka's own retry when the controller moved)."""
    return await admin._send_to_controller(request)


async def to_any_broker(admin: AIOKafkaAdminClient, request: Any) -> Any:
    """Send ``request`` to a broker of the client's choosing."""
    return await admin._send_request(request)

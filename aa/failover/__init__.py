"""Failover and failback of consumer groups between DCs: plans (dry-run by default) and their
execution on idle groups."""

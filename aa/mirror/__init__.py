"""The mirror: flows that copy records from one DC's cluster to another's."""

"""The Kafka client adapter: what aa knows of record batches on the wire, and (being moved here)
the only place that touches aiokafka's private internals (DESIGN.md, "Rooms that hold a
boundary")."""

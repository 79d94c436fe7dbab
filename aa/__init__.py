"""aa: an event-sourced, active-active replicator for Apache Kafka."""

__version__ = "0.1.0"

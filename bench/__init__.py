"""Benchmark harness: aa, MirrorMaker 2 and Kafka's own perf tools on the same brokers."""

"""Local development clusters: real Apache Kafka (KRaft) brokers run from Maven artifacts.

`aa dev up` is the embedded default for the demo, for trying aa out and for the test suite.
"""

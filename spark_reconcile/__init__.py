"""PySpark jobs that prove the DCs converged, and repair them when they did not."""

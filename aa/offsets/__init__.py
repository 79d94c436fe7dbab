"""Offset syncs (source offset -> target offset, written by each flow), the store that reads
them back, and translation of consumer-group offsets between DCs."""

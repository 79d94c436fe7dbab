"""Heartbeats: each DC writes one to its own cluster every interval; mirrored like data, they
show in every other DC how old the newest heartbeat of each remote DC is (a stopped flow shows
within one interval) and how long it took to arrive."""

"""Consumer-group checkpoints: each DC's groups' offsets translated into the other DCs, stored
there, optionally applied to idle groups."""

"""Event envelope, hybrid logical clock, resolvers and the converged view."""

"""Arms: the protocol and its registry, the built-in arms, command arms described by
arm files, report adapters, failure kinds, and the simulated agent."""

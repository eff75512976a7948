"""What agents and tools report, read: a failure's class, fingerprint and salient line, a shell
command and what it did or printed, a host's API error, pointers."""

"""How long a test waits for one thing before it calls it hung.

A bound is a hang guard: a passing test never reaches it, and a hung one fails after it
instead of holding its worker for a minute or more. It is over ten times what the wait takes
on an idle two-core machine: on one shared with five other suites (load average 20), bounds
of 20 s here (45 s and 60 s for the demo) failed tests that pass. Scenarios of several processes at
once (the races, a team of servers, the database's outages) keep bounds of their own.
"""

# One run of the installed script from start to exit (~1 s idle, most of it importing the
# SDK), one in-memory session's scenario, or one event a test caused and polls for.
HUNG_AFTER = 30
# The demo: its own process, a server's and the operator CLI's, and a wait for an answer.
DEMO_HUNG_AFTER = 90

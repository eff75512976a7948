"""The operator's side: announcements and their notifications, refusals in the operator's words,
statistics and verdicts on the triggers."""

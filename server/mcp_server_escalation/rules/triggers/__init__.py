"""What each kind of trigger is, as data: one record per escalation type (``records``)."""

"""Pure rules: functions of their inputs (and a passed-in ``now``), no I/O at all."""

"""Pure rules: functions of their inputs (and a passed-in ``now``), no I/O at all.

Grouped by what they decide: ``triggers`` (what each kind of trigger is: one record per
type), ``reading`` (what agents and tools report), ``decide`` (what a call decides and the
triggers it fires), ``guidance`` (what an agent gets back to go on),
``wording`` (stored names and facts in words), ``operators`` (the operator's side) and
``bounds`` (what keeps results and requests bounded).
"""

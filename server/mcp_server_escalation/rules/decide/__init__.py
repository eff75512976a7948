"""The decide steps: what a failure, an attempt, a progress report or an edit decides, the triggers
and budgets they fire, and the scope of paths they check."""

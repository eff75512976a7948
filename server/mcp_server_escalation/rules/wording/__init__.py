"""Stored names and facts as a person or a model reads them: words, fact lines, a task's timeline,
the agent's next directive."""

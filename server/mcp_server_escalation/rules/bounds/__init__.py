"""What keeps results and requests bounded: evidence, a result's size, the largest request a schema
admits, and what a token may reach."""

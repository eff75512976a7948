"""What an agent gets back to go on: past failures searched and ranked, a step's feedback assembled
within its budget."""

"""Script text: the scenario taxonomy, the LLM client that writes scripts, and the checks a script's
speech must pass."""

"""Planners: from an instruction in words to a library task and its parameters."""

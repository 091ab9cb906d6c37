"""Skill contracts (what a command means) and executors (how it runs, step by step)."""

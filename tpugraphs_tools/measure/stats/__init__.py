"""Statistics of timed samples only (no processes, no jax): when to stop adding rounds, the
paired rounds and their ratio CIs, robust estimators, and labels combined over processes.

Modules here are imported by their full path; this package's face is ``measure``'s.
"""

"""Worker processes: the compile worker and measurement worker mains that run in them, and
the parent's handle on them (start, pin, await, replace, stop).

Modules here are imported by their full path; this package's face is ``measure``'s.
"""

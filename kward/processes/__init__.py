"""The processes kward starts: `children` (spawning, owning, reaping and ending the
processes of commands) over `table` (the process table as /proc shows it).
"""

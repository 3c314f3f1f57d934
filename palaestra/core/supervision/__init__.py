"""Supervision: the event state machine each process runs, the runtime that starts,
watches and stops its children, how they are launched (here, on another host, by Ray), the
reaper, the watchdogs, and the hot loop of the per-step path."""

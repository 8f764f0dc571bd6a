"""A progressive rollout: one cluster's cleared writes sent in stages (a canary, then waves),
each stage judged by health gates over an analysis window, and what a failed stage changed put
back (the rollback, then a replay of what the sinks parked in their DLQs meanwhile).

- `rules` (pure): which writes go in which stage, what the gates say of a health sample, the
  steps that undo a failed rollout, how a dry run describes it;
- `checks` (edge): what it needs from the project around it: the health probe, the rollback's
  gate, the canary check, the journal read for a killed run's leftovers, the run's hooks;
- `executor` (edge: writes through apply with the cluster's Cleared): the stages, the gates,
  the rollback and the replay of what was parked.
"""

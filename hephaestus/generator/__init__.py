"""Generator: definitions/*.yaml (+ table catalogs) fan out to connector JSON files (`run`).

The package imports nothing itself: drift and reconcile read its model without loading the
generator's run, catalogs and output (issue 47)."""

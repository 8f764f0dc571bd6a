"""`hephaestus plugins`: each worker's plugins and versions, what each connector runs (issue 50)."""

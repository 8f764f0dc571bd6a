"""What writes do to data, and the one gate every write passes (pure): `values` (config values
as the plugins read them), `views` (a connector's config resolved), `transforms`, `effects`
(each step kind's effects), `fleet` (the fleet-wide rules), `gate` (the decision and the pass),
`seal` (a saved plan's seal and keyed fingerprints)."""

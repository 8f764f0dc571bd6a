"""Publication upkeep: what each source database's publication must gain or lose (`change`, pure),
read and altered in the source databases (`db`, the PostgreSQL edge). Reconcile plans and applies it."""

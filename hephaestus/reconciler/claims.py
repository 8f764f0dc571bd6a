"""The ownership record as an apply releases it around each delete or rename away (edge: the
ownership store): marked releasing, with the fingerprint of the config it had, before the write
is sent; forgotten once Connect confirmed it. Any other outcome (not sent, refused, never known)
leaves the mark, which `ownership.owns` reads against the live config: the connector stays
owned while it runs the config it had (a delete that did not land is finished by a later run),
and a claim never outlives its connector to make a later run delete another team's connector of
the same name."""

from __future__ import annotations

from collections.abc import Mapping

from hephaestus.fleet.model import Live, config_hash
from hephaestus.project import Cluster, Project
from hephaestus.state import ownership


class OwnershipClaims:
    """apply.Claims over the ownership store."""

    def __init__(
        self, store: ownership.OwnershipStore, project: Project, cluster: Cluster, run_id: str, live: Mapping[str, Live]
    ) -> None:
        self.store, self.project, self.cluster, self.run_id, self.live = store, project, cluster, run_id, live
        self.scope = ownership.scope_of(cluster.select)

    def release(self, name: str) -> None:
        (claim,) = ownership.claims_of([name], self.scope, "created", self.run_id)
        fingerprint = config_hash(self.live[name].config) if name in self.live else None
        self.store.claim(
            self.project.name, self.cluster.name, [ownership.releasing(claim, fingerprint or "", self.run_id)]
        )

    def moving(self, name: str, source: str) -> None:
        """A move's mark, before its first write: a copy here that a killed run left is ours to
        finish (`reconciler.crossing`); gone, the run's record forgets it (`run._settled_marks`)."""
        claims = ownership.claims_of([name], self.scope, ownership.MOVING + source, self.run_id)
        self.store.claim(self.project.name, self.cluster.name, claims)

    def forget(self, name: str) -> None:
        try:
            self.store.release(self.project.name, self.cluster.name, [name])
        except ownership.OwnershipUnavailable:
            pass  # the mark stays: the next run sees the connector gone and forgets it

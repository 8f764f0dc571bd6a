"""Connector, slot and topic names (the reference's, so its users recognise them)."""

from __future__ import annotations

from dataclasses import dataclass

from hephaestus.generator.model import Definition, SinkSpec, TableRef

HELM_ENV = "{{ .Values.global.environment }}"
HELM_ORG = "{{ .Values.global.vendor }}"


@dataclass(frozen=True)
class NamingScope:
    """One env x org of a definition; with Helm naming, the placeholders Helm fills in."""

    env: str
    org: str
    helm: bool = False

    @property
    def prefix(self) -> str:
        return f"{self.env}_{self.org}"

    def file_stem(self, name: str) -> str:
        """Helm names carry braces and spaces: file names leave the env/org prefix out."""
        return name[len(self.prefix) + 1 :] if self.helm else name


def scopes(d: Definition) -> list[NamingScope]:
    if d.naming == "helm":
        return [NamingScope(HELM_ENV, HELM_ORG, helm=True)]
    return [NamingScope(env, org) for env in d.envs for org in d.orgs]


def source_name(d: Definition, s: NamingScope) -> str:
    return f"{s.prefix}_{d.database}_source_connector"


def slot_name(d: Definition, s: NamingScope) -> str:
    return f"{s.prefix}_{d.database}"


def topic(d: Definition, s: NamingScope, table: TableRef) -> str:
    return f"{s.env}.{s.org}.{d.database}.{table.schema}.{table.table}"


def sink_name(d: Definition, s: NamingScope, source_table: TableRef, sink: SinkSpec) -> str:
    """`…_bob_to_auth_users_sink_connector`; a renamed target is spelled out so names stay unique."""
    target = "" if sink.table == source_table else f"_as_{sink.table.slug}"
    return f"{s.prefix}_{d.database}_to_{sink.database}_{source_table.slug}{target}_sink_connector"


def topic_sink_name(d: Definition, s: NamingScope, sink: SinkSpec) -> str:
    """`…_kec_to_kec_dwh_fact_invoice_sink_connector`: a topic sink is named by its cluster
    (the topic has no source table) and its target, which one cluster writes once."""
    return f"{s.prefix}_{d.cluster.replace('-', '_')}_to_{sink.database}_{sink.table.slug}_sink_connector"


def secret(d: Definition, database: str, key: str) -> str:
    """A FileConfigProvider placeholder: Connect resolves it, git never holds the value."""
    return f"${{file:{d.secrets_file}:{database}_{key}}}"

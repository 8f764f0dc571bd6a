"""What a reconcile tells Slack about one cluster (edge: the webhook): deletions, failures,
a rollout's failed gate and its rollback."""

from __future__ import annotations

from hephaestus.notify import slack
from hephaestus.project import Project
from hephaestus.reconciler.outcome import ClusterOutcome


def post(project: Project, out: ClusterOutcome) -> None:
    """Deletions and failures go to Slack when a webhook is configured (names and reasons
    come from the cluster: escaped; the whole text passes the redactor in `slack.post`)."""
    esc = slack.escape
    lines = [f"deleted `{esc(r.name)}`" for r in out.results if r.ok and r.action == "delete"]
    lines += [f"FAILED {r.action} `{esc(r.name)}`: {esc(r.detail)}" for r in (*out.results, *out.followups) if not r.ok]
    lines += [f"rolled back {r.action} `{esc(r.name)}`: {esc(r.detail)}" for r in out.rollback if r.ok]
    lines += [f"FAILED rollback {r.action} `{esc(r.name)}`: {esc(r.detail)}" for r in out.rollback if not r.ok]
    lines += [
        f"rollout: {esc(line)}" for line in out.report if "failed" in line or "not taken" in line or "left" in line
    ]
    lines += [f"invalid config `{esc(n)}`: {esc(', '.join(sorted(k)))}" for n, k in out.invalid.items()]
    if out.error:
        lines.append(f"error: {esc(out.error)}")
    if lines:
        slack.post(project.webhook(), f"hephaestus reconcile on cluster *{out.cluster}*:\n" + "\n".join(lines))

"""Post to a Slack incoming webhook (slack-sdk). Failures to notify never fail a job."""

from __future__ import annotations

import logging

from hephaestus.secrets import REDACTOR

log = logging.getLogger("hephaestus.notify")


def escape(text: str) -> str:
    """Text that came from a cluster (names, classes, traces), safe inside a Slack message:
    Slack's three control characters escaped (no injected links or mentions), and no backtick
    to close the code span it is shown in."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("`", "'")


def post(webhook_url: str | None, text: str) -> bool:
    """Send `text`, through the redactor; False when not configured or not delivered."""
    if not webhook_url:
        return False
    from slack_sdk.webhook import WebhookClient  # only runs that notify pay for the import

    try:
        response = WebhookClient(webhook_url, timeout=10).send(text=REDACTOR(text))
    except Exception as exc:  # noqa: BLE001 - any transport failure: log, carry on
        log.warning("slack notification not delivered: %s", type(exc).__name__)
        return False
    if response.status_code != 200:
        log.warning("slack notification not delivered: HTTP %s", response.status_code)
    return response.status_code == 200

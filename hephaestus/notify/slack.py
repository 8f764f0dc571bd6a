"""Post to a Slack incoming webhook (slack-sdk). Failures to notify never fail a job."""

from __future__ import annotations

import logging

from slack_sdk.webhook import WebhookClient

log = logging.getLogger("hephaestus.notify")


def post(webhook_url: str | None, text: str) -> bool:
    """Send `text` (already free of secrets); False when not configured or not delivered."""
    if not webhook_url:
        return False
    try:
        response = WebhookClient(webhook_url, timeout=10).send(text=text)
    except Exception as exc:  # noqa: BLE001 - any transport failure: log, carry on
        log.warning("slack notification not delivered: %s", type(exc).__name__)
        return False
    if response.status_code != 200:
        log.warning("slack notification not delivered: HTTP %s", response.status_code)
    return response.status_code == 200

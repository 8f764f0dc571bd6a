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
    """Send `text`, through the redactor; False when not configured or not delivered.

    slack-sdk carries the request; the rest is the shared HTTP edge's: TLS by the same rules,
    the URL (its path is the secret) masked everywhere, and only a refusal that proves the
    message was not delivered (429, rate limited) sent again. A reset or timeout is not: a
    webhook post cannot be read back, and an alert twice is noise that trains people to ignore it.
    """
    if not webhook_url:
        return False
    from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
    from slack_sdk.webhook import WebhookClient  # only runs that notify pay for the import

    from hephaestus.http import ssl_context

    REDACTOR.learn(webhook_url)
    try:
        hook = WebhookClient(
            webhook_url,
            timeout=10,
            ssl=ssl_context(True, "Slack") if webhook_url.lower().startswith("https://") else None,
            retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=2)],
        )
        response = hook.send(text=REDACTOR(text))
    except Exception as exc:  # noqa: BLE001 - any transport failure: log, carry on
        log.warning("slack notification not delivered: %s", type(exc).__name__)
        return False
    if response.status_code != 200:
        log.warning("slack notification not delivered: HTTP %s", response.status_code)
    return response.status_code == 200

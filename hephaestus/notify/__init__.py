"""Notifications: Slack (slack-sdk webhook) and Prometheus (prometheus-client)."""

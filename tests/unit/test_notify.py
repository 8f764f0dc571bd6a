"""Slack notifications reach a (loopback) webhook; an unreachable one never fails the job."""

from __future__ import annotations

from hephaestus.notify import slack
from tests.loopback import slack_receiver


def test_post_reaches_the_webhook() -> None:
    with slack_receiver() as receiver:
        assert slack.post(receiver.url, "deleted `x`")
    assert receiver.texts() == ["deleted `x`"]


def test_unconfigured_or_unreachable_is_not_an_error() -> None:
    assert not slack.post(None, "x")
    assert not slack.post("http://127.0.0.1:9/hook", "x")

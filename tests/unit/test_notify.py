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


def test_a_rate_limited_post_is_sent_again_and_delivered_once() -> None:
    with slack_receiver(refusals=(429,)) as receiver:
        assert slack.post(receiver.url, "heal failed")
    assert receiver.posts == 2 and receiver.texts() == ["heal failed"]


def test_an_outage_is_not_retried_and_says_not_delivered() -> None:
    """A 500 may come from a Slack that posted the message anyway: it is not sent twice."""
    with slack_receiver(refusals=(500,)) as receiver:
        assert not slack.post(receiver.url, "heal failed")
    assert receiver.posts == 1 and receiver.texts() == []


def test_the_webhook_url_is_masked_once_posted_to(caplog: object) -> None:
    from hephaestus.secrets import REDACTOR

    with slack_receiver() as receiver:
        slack.post(receiver.url, "x")
        assert "/services/T000/B000/XXX" not in REDACTOR(f"posted to {receiver.url}")

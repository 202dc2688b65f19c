"""An ERROR frame's text keeps its body's detail: RabbitMQ names the failure in the ``message``
header and says what it is in the body; ActiveMQ repeats the message in its stack trace."""

from __future__ import annotations

from ferrymq.client import BrokerErrorFrame


def test_the_body_says_what_the_message_only_names() -> None:
    error = BrokerErrorFrame("Bad CONNECT", body=b"Virtual host '/' access denied\n")
    assert str(error) == "broker error: Bad CONNECT: Virtual host '/' access denied"


def test_a_stack_trace_that_repeats_the_message_is_not_quoted() -> None:
    body = b"java.lang.SecurityException: User name [x] or password is invalid.\n\tat org..."
    error = BrokerErrorFrame("User name [x] or password is invalid.", body=body)
    assert str(error) == "broker error: User name [x] or password is invalid."


def test_a_body_alone_is_the_message_and_long_ones_are_cut() -> None:
    assert str(BrokerErrorFrame("", body=b"\n  only the body\n")) == "broker error: only the body"
    assert str(BrokerErrorFrame("")) == "broker error (no message)"
    long = BrokerErrorFrame("short", body=b"x" * 1000)
    assert len(str(long)) < 250
    assert long.body == b"x" * 1000

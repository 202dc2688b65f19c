"""A refusal as AMQP says it: an error condition with a description.

The core refuses with ``BrokerError`` (and ``NotAuthorizedError`` for what the user may not do);
the adapter raises ``AmqpError`` where it knows the condition itself. ``condition_for`` gives
every refusal its AMQP condition, so a client library can tell them apart (Qpid JMS maps
``amqp:unauthorized-access`` to a JMSSecurityException, ``amqp:invalid-field`` on the
container-id to an InvalidClientIDException).
"""

from __future__ import annotations

import proton

from ferrymq.adapters.amqp.body import MalformedMessageError
from ferrymq.amqp import codes
from ferrymq.core.authorization import NotAuthorizedError
from ferrymq.core.errors import BrokerError

NOT_ASCII = "a symbol holds a byte that is not ASCII"
"""proton reads every symbol as ASCII and raises UnicodeDecodeError on any other byte."""


class AmqpError(BrokerError):
    """A refusal with its AMQP condition."""

    def __init__(self, condition: str, message: str, *, fatal: bool = False) -> None:
        super().__init__(message, fatal)
        self.condition = condition


def condition_for(error: BrokerError) -> proton.Condition:
    if isinstance(error, AmqpError):
        name = error.condition
    elif isinstance(error, MalformedMessageError):
        name = codes.DECODE_ERROR
    elif isinstance(error, NotAuthorizedError):
        name = codes.UNAUTHORIZED
    elif "Usage Manager" in error.message:
        name = codes.RESOURCE_LIMIT
    elif error.message.startswith("Invalid transaction id"):
        name = codes.TRANSACTION_UNKNOWN_ID
    else:
        name = codes.NOT_ALLOWED
    return proton.Condition(name, error.message)

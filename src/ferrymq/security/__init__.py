"""Authentication and authorization, decided purely (no I/O on the decision path): who a
connection is (``Authenticator``), and what that subject may do to a destination
(``Authorizer``). The core asks; the protocol adapters only pass credentials in."""

from ferrymq.security.api import (
    AuthenticationError,
    Authenticator,
    AuthorizationError,
    Authorizer,
    Credentials,
    Operation,
    Subject,
)

__all__ = [
    "AuthenticationError",
    "Authenticator",
    "AuthorizationError",
    "Authorizer",
    "Credentials",
    "Operation",
    "Subject",
]

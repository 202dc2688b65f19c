"""The SASL exchange of one AMQP connection, before proton sees any frame.

The broker's own SASL layer (``amqp.sasl``) reads the protocol header, offers its mechanisms
(EXTERNAL first on a TLS connection whose client certificate was verified, then PLAIN and
ANONYMOUS) and decodes ``sasl-init``; the login is checked by the broker's authentication as a
STOMP CONNECT's is (``BrokerSecurity.begin_login``, off the loop, while the connection holds
what came after). A client that skips SASL is served only without authentication. Once the
outcome is sent, ``finished`` hands the converter the bytes that followed and who logged in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from ferrymq.adapters.amqp.work import SaslLogin, SaslStart
from ferrymq.amqp.sasl import (
    OUTCOME_AUTH,
    OUTCOME_OK,
    SASL_HEADER,
    Header,
    SaslError,
    SaslServer,
    plain_credentials,
)
from ferrymq.core.errors import BrokerError
from ferrymq.security.api import Subject
from ferrymq.service.connection import BrokerConnection

if TYPE_CHECKING:
    from ferrymq.service.broker import BrokerService

Finished = Callable[[bytes, Subject | None], None]


class SaslHandshake:
    def __init__(
        self, service: BrokerService, connection: BrokerConnection, finished: Finished
    ) -> None:
        self.service = service
        self.connection = connection
        self.sasl = SaslServer(())
        self._finished = finished
        self._login: asyncio.Future[Subject | None] | None = None

    def receive(self, data: bytes) -> None:
        sasl = self.sasl
        sasl.feed(data)
        work: list[object] = []
        try:
            while (event := sasl.next_event()) is not None:
                work.append(SaslStart(event) if isinstance(event, Header) else SaslLogin(event))
                if event is Header.AMQP:
                    break
        except SaslError as exc:
            if sasl.header is None:  # not AMQP: answer with the header the broker speaks
                self.connection.fail(SASL_HEADER, str(exc), fatal=True)
                return
            self.connection.run(work)  # the header and mechanisms go out first
            self.connection.fail(SaslServer.outcome_frame(OUTCOME_AUTH), str(exc), fatal=True)
            return
        self.connection.run(work)

    def refusal(self, work: object | None) -> bytes:
        """How a refused handshake is said: the outcome of a login, else the SASL header."""
        return (
            SaslServer.outcome_frame(OUTCOME_AUTH) if isinstance(work, SaslLogin) else SASL_HEADER
        )

    def on_start(self, work: SaslStart) -> None:
        if work.header is Header.SASL:
            self.sasl.mechanisms = tuple(self._mechanisms())
            self.connection.send(self.sasl.mechanisms_frame())
            return
        if self.service.security.authenticator is not None:
            raise BrokerError(
                "authentication is required: connect with SASL (PLAIN, or EXTERNAL with a "
                "client certificate)"
            )
        self._finished(self.sasl.rest(), None)

    def on_login(self, work: SaslLogin) -> bool:
        """True (hold everything) while the login is checked off the loop; the connection hands
        this request back when the answer is in."""
        login, self._login = self._login, None
        if login is None:
            user, password = _credentials(work)
            login = self.service.security.begin_login(self.connection.transport, user, password)
            if not login.done():
                self._login = login
                self.connection.hold(login)
                return True
        try:
            subject = login.result()
        except BrokerError as exc:
            self.connection.fail(SaslServer.outcome_frame(OUTCOME_AUTH), exc.message, fatal=True)
            return False
        self.connection.send(SaslServer.outcome_frame(OUTCOME_OK))
        self._finished(self.sasl.rest(), subject)
        return False

    def _mechanisms(self) -> list[str]:
        certificate = getattr(self.connection.transport, "peer_certificate_subject", None)
        mechanisms = ["PLAIN", "ANONYMOUS"]
        return ["EXTERNAL", *mechanisms] if certificate else mechanisms


def _credentials(work: SaslLogin) -> tuple[str | None, str | None]:
    mechanism = work.init.mechanism.upper()
    if mechanism == "PLAIN":
        try:
            return plain_credentials(work.init.response)
        except SaslError as exc:
            raise BrokerError(str(exc)) from None
    if mechanism in ("ANONYMOUS", "EXTERNAL"):
        return None, None  # EXTERNAL: the transport's verified certificate says who
    raise BrokerError(f"SASL mechanism {work.init.mechanism} is not offered")

"""The mirror target's link, as a scripted Artemis mirror source sees it (the mirror's wire
contract; Artemis's ``AMQPMirrorControllerTarget`` and
``AMQPConnectionContext.handleReplicaTargetLinkOpened``)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import proton
from hypothesis import given, settings
from hypothesis import strategies as st

from ferrymq.adapters.amqp.attach_scan import AttachScanner
from ferrymq.amqp.attach_frames import AttachCapabilities
from ferrymq.core.destination import Destination
from ferrymq.testing import BrokerThread, broker_config
from tests.amqp.mirror_source import MirrorSource, mirrored_send
from tests.amqp.proton_support import AUTHORIZATION, USERS, amqp_broker, region_of

TUNNELING = "AMQ_CORE_MESSAGE_TUNNELING"


def test_the_link_is_answered_with_amq_mirror_and_the_node_id(tmp_path: Path) -> None:
    """Reference scenario 25, "wire contract" (IT/AMQPMirrorConnectionTest): the target offers
    ``amq.mirror`` (never core tunneling), names its node id in ``x-opt-amq-bkr-id``, grants
    credit, and makes no queue of the mirror address."""
    with (
        BrokerThread(broker_config(tmp_path, amqp=True)) as broker,
        MirrorSource(broker.amqp_port) as source,
    ):
        assert source.attached
        assert source.offered == ("amq.mirror",)
        service = broker.broker.service  # type: ignore[union-attr]
        assert source.remote_node == service.region.node_id
        assert source.link.credit > 0
        source.settled([source.send(mirrored_send("one", "ID:src-1:1"))])
        queues = broker.call(lambda: sorted(d.name for d in service.region.queues))
        assert queues == ["Q"], "the $ACTIVEMQ_ARTEMIS_MIRROR_ address is no queue on the target"


def test_a_link_that_does_not_desire_amq_mirror_is_refused(tmp_path: Path) -> None:
    """Reference scenario 24 seen from the peer (ValidateAMQPErrorsTest.
    testNoServerOfferedMirrorCapability): a link to the mirror address without ``amq.mirror``
    is detached with an error, and nothing of it stays."""
    with (
        BrokerThread(broker_config(tmp_path, amqp=True)) as broker,
        MirrorSource(broker.amqp_port, desired=()) as source,
    ):
        refusal = source.refusal
        assert refusal is not None
        assert refusal.name == "amqp:precondition-failed"
        assert "amq.mirror" in (refusal.description or "")
        assert source.offered == ()
        region = region_of(broker)
        assert broker.call(lambda: Destination.queue(source.address) not in region.queues)
    with (
        BrokerThread(broker_config(tmp_path / "again", amqp=True)) as broker,
        MirrorSource(broker.amqp_port, desired=(TUNNELING, "amq.mirror")) as source,
    ):
        assert source.attached, "a mirror that asks for the capability is then accepted"
        assert source.offered == ("amq.mirror",), "core tunneling is never offered"


def test_the_mirror_user_needs_write_on_the_mirror_address(tmp_path: Path) -> None:
    """Artemis checks SEND on ``$ACTIVEMQ_ARTEMIS_MIRROR_<name>`` at attach: a user without
    WRITE there is refused with amqp:unauthorized-access; an admin is served."""
    plugins = USERS.format(anonymous="") + AUTHORIZATION
    with amqp_broker(tmp_path, plugins=plugins) as broker:
        with MirrorSource(broker.amqp_port, login=("user", "password")) as source:
            refusal = source.refusal
            assert refusal is not None
            assert refusal.name == "amqp:unauthorized-access"
        with MirrorSource(broker.amqp_port, login=("system", "manager")) as source:
            assert source.attached
            assert source.offered == ("amq.mirror",)


def _attach_frame(name: str, desired: tuple[str, ...]) -> bytes:
    """An attach frame as proton writes it, with ``desired`` capabilities written in."""
    fields: Any = [name, 0, False, 1, 0, *([None] * 9)]
    data = proton.Data()
    data.put_object(proton.Described(proton.ulong(0x12), fields))
    body = data.encode()
    writer = AttachCapabilities()
    writer.announce(name, (), desired)
    return writer.rewrite(struct.pack(">IBBH", 8 + len(body), 2, 0, 0) + body)


_TRANSFER_BODY = b"\x00\x53\x14" + b"\x45" * 40 + b"payload" * 30
_TRANSFER = struct.pack(">IBBH", 8 + len(_TRANSFER_BODY), 2, 0, 0) + _TRANSFER_BODY
_EMPTY = struct.pack(">IBBH", 8, 2, 0, 0)
_STREAM = b"AMQP\x00\x01\x00\x00" + b"".join(
    _attach_frame(f"link-{i}", ("amq.mirror",) if i % 2 else ()) + _TRANSFER * 3 + _EMPTY
    for i in range(6)
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(_STREAM)), max_size=40))
def test_attach_frames_are_found_however_the_reads_cut_the_stream(cuts: list[int]) -> None:
    """The broker's fast walk over a client's frames (``attach_scan``) finds exactly the
    capabilities a frame-by-frame reading finds, wherever the socket's reads end."""
    expected = AttachCapabilities()
    expected.scan(_STREAM)
    found = AttachCapabilities()
    scanner = AttachScanner(found)
    start = 0
    for cut in [*sorted(set(cuts)), len(_STREAM)]:
        scanner.scan(_STREAM[start:cut])
        start = cut
    assert found.incoming == expected.incoming
    assert found.incoming["link-1"].desired == ("amq.mirror",)

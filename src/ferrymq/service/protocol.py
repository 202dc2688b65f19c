"""One STOMP client connection, from bytes to broker calls and back (ActiveMQ's ProtocolConverter).

The STOMP session (sans-IO) turns bytes into validated events; this class maps each event to a
call on the region broker, and queues what goes back in an *outbox* that keeps frame order: a
frame that depends on a store commit (a receipt for a persistent send, a persistent message the
store must first mark as delivered) waits at the head of the outbox until that commit is durable,
and everything behind it waits too.  Nothing here blocks and nothing here owns a task: waiting is
a done-callback on the commit's future, timers belong to the inactivity monitor.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, cast

from ferrymq.core.consumer import (
    DURABLE_TOPIC_PREFETCH,
    QUEUE_BROWSER_PREFETCH,
    QUEUE_PREFETCH,
    TOPIC_PREFETCH,
    AckMode,
    Consumer,
    NetworkFilter,
)
from ferrymq.core.destination import Destination, DestinationError, DestinationPattern
from ferrymq.core.effects import Delivery
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message, MessageId
from ferrymq.core.region import AckRef
from ferrymq.core.selector import SelectorError, parse_selector
from ferrymq.service import dialect
from ferrymq.service.replication import ReplicaLink
from ferrymq.stomp import constants as h
from ferrymq.stomp.encoder import assemble_message, header_block
from ferrymq.stomp.errors import LocalProtocolError, RemoteProtocolError
from ferrymq.stomp.events import (
    Abort,
    Ack,
    Begin,
    Commit,
    Connect,
    Disconnect,
    Nack,
    Send,
    ServerEvent,
    Subscribe,
    Unsubscribe,
)
from ferrymq.stomp.limits import Limits
from ferrymq.stomp.session import ServerSession
from ferrymq.transport.connection import TransportConnection
from ferrymq.transport.inactivity import InactivityMonitor

if TYPE_CHECKING:
    from ferrymq.service.broker import BrokerService

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 30.0
"""A socket that sends no CONNECT in this time is closed (ActiveMQ connectionAttemptTimeout)."""

_DELIVERY_COUNT = b"\n" + dialect.DELIVERY_COUNT.encode() + b":%d"

_OutboxItem = tuple["asyncio.Future[None] | None", bytes, "Delivery | None", bool]
"""(commit to wait for, frame, auto-ack delivery, is a MESSAGE)"""


class StompConnection:
    def __init__(
        self,
        service: BrokerService,
        connector: str,
        *,
        limits: Limits,
        grace: float,
    ) -> None:
        self.service = service
        self.region = service.region
        self.connector = connector
        self.connection_id = service.new_connection_id()
        self.session = ServerSession(limits=limits)
        self._grace = grace
        self._cluster_updates = 0
        self.names = dialect.TemporaryNames(self.connection_id)
        self.transport: TransportConnection | None = None
        self.connected = False
        self.version = h.V1_0
        self.closed = False
        """The socket is gone (or going) and nothing more is written."""
        self._ended = False
        """No more frames are handled; the broker has forgotten this connection."""
        self._outbox: deque[_OutboxItem] = deque()
        self._armed: asyncio.Future[None] | None = None
        self._held_auto: list[Delivery] = []
        self._stalled: list[ServerEvent] = []
        self._monitor: InactivityMonitor | None = None
        self._connect_timer: asyncio.TimerHandle | None = None
        self._close_when_flushed = False
        self._sub_has_id: dict[str, bool] = {}
        self._sub_blocks: dict[str, bytes] = {}
        self._browsers: set[str] = set()
        self._stall_timer: asyncio.TimerHandle | None = None
        self._replica: ReplicaLink | None = None
        """Set when this connection is a pure master/slave slave's replication link."""
        self.network_bridge: str | None = None
        """Set (the connector's name) when a network bridge opened this connection."""
        self.remote_broker_id: str | None = None
        self.remote_broker_name: str | None = None

    def has_ended(self) -> bool:
        """No more frames are handled (a method, so the type checker does not assume it
        unchanged across calls that can end the session)."""
        return self._ended

    # -- transport callbacks ------------------------------------------------------------------

    def connection_made(self, connection: TransportConnection) -> None:
        self.transport = connection
        self.service.register(self)
        self._connect_timer = asyncio.get_running_loop().call_later(
            CONNECT_TIMEOUT_S, self._connect_timeout
        )

    def data_received(self, data: bytes) -> None:
        if self._ended:
            return
        while True:
            try:
                events = self.session.receive_data(data)
            except RemoteProtocolError as exc:
                # Frames decoded before the fault come first (STOMP keeps frame order).
                self._accept(cast(list[ServerEvent], list(exc.events)))
                if self.has_ended():
                    return
                self.service.process()
                self._fail(exc.message, exc.receipt_id, fatal=exc.fatal)
                if exc.fatal:
                    return
                data = b""
                continue
            self._accept(events)
            return

    def _accept(self, events: list[ServerEvent]) -> None:
        if not events:
            return
        if self._stalled:
            self._stalled.extend(events)
            return
        self._handle_events(events)

    def connection_lost(self, exc: Exception | None) -> None:
        self._teardown()

    def writing_paused(self) -> None:
        pass

    def writing_resumed(self) -> None:
        if self._held_auto:
            held, self._held_auto = self._held_auto, []
            self.service.auto_acks.extend(held)
            self.service.process()

    # -- events -------------------------------------------------------------------------------

    def _handle_events(self, events: list[ServerEvent]) -> None:
        service = self.service
        service.tick_clock()
        for index, event in enumerate(events):
            if self._ended:
                break
            try:
                if self._handle(event):
                    self._stall(list(events[index:]))
                    break
            except BrokerError as exc:
                service.process()
                self._fail(exc.message, getattr(event, "receipt", None), fatal=exc.fatal)
                if exc.fatal:
                    return
        service.process()

    def _stall(self, events: list[ServerEvent]) -> None:
        """Producer flow control: stop reading until the broker has room for this SEND."""
        self._stalled = events
        if self.transport is not None:
            self.transport.pause_reading()
        self.service.wait_for_space(self)
        timeout_ms = self.service.send_fail_after_ms
        if timeout_ms is not None:
            self._stall_timer = asyncio.get_running_loop().call_later(
                timeout_ms / 1000, self._stall_timed_out
            )

    def _stall_timed_out(self) -> None:
        """``sendFailIfNoSpaceAfterTimeout``: the blocked SEND fails, the rest carries on."""
        self._stall_timer = None
        if not self._stalled or self._ended:
            return
        blocked = self._stalled.pop(0)
        self.service.stop_waiting(self)
        self._fail(
            "Usage Manager is still full after sendFailIfNoSpaceAfterTimeout; the message was "
            "not accepted",
            getattr(blocked, "receipt", None),
            fatal=False,
        )
        self.resume()

    def resume(self) -> None:
        """Flow control lifted: handle the frames that were waiting, then read again."""
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        events, self._stalled = self._stalled, []
        if self.transport is not None:
            self.transport.resume_reading()
        if events and not self._ended:
            self._handle_events(events)

    def _handle(self, event: ServerEvent) -> bool:
        """Handle one event; True means "blocked by flow control, try again later"."""
        if self._replica is not None:
            self._on_replica_frame(event)
            return False
        match event:
            case Send():
                return self._on_send(event)
            case Ack() | Nack():
                self._on_ack(event)
            case Subscribe():
                self._on_subscribe(event)
            case Unsubscribe():
                self._on_unsubscribe(event)
            case Begin():
                self.region.begin(self.connection_id, event.transaction)
                self._receipt(event.receipt)
            case Commit():
                self._with_receipt(event.receipt, self.region.commit, event.transaction)
            case Abort():
                self._with_receipt(event.receipt, self.region.abort, event.transaction)
            case Connect():
                self._on_connect(event)
            case Disconnect():
                self._on_disconnect(event)
            case _:
                pass  # heart-beat: its arrival already counted as activity
        return False

    def _with_receipt(self, receipt: str | None, call: object, *args: str) -> None:
        ops_before = len(self.region.effects.store_ops)
        call(self.connection_id, *args)  # type: ignore[operator]
        self._receipt(receipt, needs_commit=len(self.region.effects.store_ops) > ops_before)

    def _receipt(self, receipt: str | None, *, needs_commit: bool = False) -> None:
        """Queue a RECEIPT; one that depends on the store leaves once the write that the end of
        this read makes is durable (every receipt of a read shares that one write)."""
        if receipt is None:
            return
        wait = self.service.commit_barrier() if needs_commit else None
        self._enqueue(self.session.receipt(receipt), wait)

    def _on_connect(self, event: Connect) -> None:
        if self._connect_timer is not None:
            self._connect_timer.cancel()
            self._connect_timer = None
        transport = self.transport
        if event.headers.get(h.FERRYMQ_REPLICATION) == "true":
            # A pure master/slave slave: it gets the replication stream, nothing else.
            name = event.headers.get(h.FERRYMQ_REPLICA) or self.connection_id
            self._replica = self.service.attach_replica(self, name)
        elif not self.service.accepting_clients:
            raise BrokerError("this broker is waiting for its slave to attach (waitForSlave)")
        else:
            self.region.add_connection(
                self.connection_id,
                event.client_id or None,
                user=event.login,
                remote_address=transport.remote_address if transport else None,
            )
        self.connected = True
        self.version = event.version
        client_sends, client_wants = event.heart_beat
        # ActiveMQ adopts the client's values: it sends every cy and expects data every cx.
        read_timeout = int(client_sends * self._grace) if client_sends else 0
        write_interval = max(1, client_wants // 2) if client_wants else 0
        if transport is not None and (read_timeout or write_interval):
            self._monitor = InactivityMonitor(
                transport,
                read_timeout_ms=read_timeout,
                write_interval_ms=write_interval,
                on_read_timeout=self._heart_beat_missed,
                send_keepalive=self._send_keepalive,
            )
            self._monitor.start()
        extra: dict[str, str] = {}
        bridge = event.headers.get(h.FERRYMQ_NETWORK_BRIDGE)
        if bridge is not None:
            self.network_bridge = bridge or "bridge"
            self.remote_broker_id = event.headers.get(h.FERRYMQ_BROKER_ID)
            self.remote_broker_name = event.headers.get(h.FERRYMQ_BROKER_NAME)
            extra[h.FERRYMQ_BROKER_ID] = self.region.broker_id
            extra[h.FERRYMQ_BROKER_NAME] = self.region.broker_name
            own_url = self.service.cluster_url()
            if own_url is not None:
                extra[h.FERRYMQ_BROKER_URL] = own_url
            peer_url = event.headers.get(h.FERRYMQ_BROKER_URL)
            if event.headers.get(h.FERRYMQ_CLUSTER_PEER) == "true" and peer_url:
                broker_id = self.remote_broker_id or self.connection_id
                name = self.remote_broker_name or broker_id
                self.service.cluster.peer_joined(self.connection_id, broker_id, name, peer_url)
        cluster = self.service.cluster
        wants_updates = event.headers.get(h.FERRYMQ_CLUSTER_UPDATES) == "true"
        if wants_updates and cluster.serves(self.connector):
            extra[h.FERRYMQ_CLUSTER_BROKERS] = ",".join(cluster.attach(self.connector, self))
        self._write(
            self.session.connected(
                session=self.connection_id,
                server=self.service.server_name,
                heart_beat=(client_wants, client_sends),
                headers=extra,
            )
        )

    def _on_send(self, event: Send) -> bool:
        region = self.region
        destinations, created = dialect.parse_destinations(event.destination, self.names)
        for destination in created:
            region.create_temporary(self.connection_id, destination)
        message_id = None
        if self.network_bridge is not None:
            self._mirror_temporaries(destinations)
            message_id = event.headers.get(h.MESSAGE_ID) or None
        message = dialect.message_from_send(
            MessageId(message_id) if message_id is not None else region.new_message_id(),
            event.headers,
            event.body,
            destinations,
            region.now,
            self.names,
        )
        blocked = region.producer_blocked(message)
        if blocked is not None:
            if self.service.send_fail_if_no_space:
                raise BrokerError(
                    f"Usage Manager {blocked.capitalize()} is Full. Stopping producer "
                    f"({self.connection_id}) to prevent flooding {event.destination}.",
                    fatal=False,
                )
            return True
        ops_before = len(region.effects.store_ops)
        accepted = region.send(self.connection_id, message, destinations, event.transaction)
        if event.receipt is not None:
            grew = len(region.effects.store_ops) > ops_before
            self._receipt(event.receipt, needs_commit=grew or not accepted)
        return False

    def _on_ack(self, event: Ack | Nack) -> None:
        if self.version == h.V1_2:
            ref = AckRef(ack_id=event.id)
        else:
            ref = AckRef(message_id=event.message_id, subscription_id=event.subscription)
        ops_before = len(self.region.effects.store_ops)
        if isinstance(event, Nack):
            self.region.nack(self.connection_id, ref, event.transaction)
        else:
            self.region.acknowledge(self.connection_id, ref, event.transaction)
        self._receipt(event.receipt, needs_commit=len(self.region.effects.store_ops) > ops_before)

    def _on_subscribe(self, event: Subscribe) -> None:
        region = self.region
        headers = event.headers
        destinations, created = dialect.parse_destinations(event.destination, self.names)
        if len(destinations) != 1:
            raise BrokerError("SUBSCRIBE to a composite destination is not supported yet")
        destination = destinations[0]
        for temporary in created:
            region.create_temporary(self.connection_id, temporary)
        if self.network_bridge is not None:
            self._mirror_temporaries(destinations)
        subscription_id = (
            event.id if event.id is not None else f"/subscription-to/{event.destination}"
        )
        durable_name = headers.get(h.ACTIVEMQ_SUBSCRIPTION_NAME)
        browser = headers.get(h.BROWSER, "").lower() == "true" and self.version != h.V1_0
        selector = None
        if event.selector:
            try:
                selector = parse_selector(event.selector)
            except SelectorError as exc:
                raise BrokerError(str(exc)) from None
        if browser:
            default_prefetch = QUEUE_BROWSER_PREFETCH
        elif not destination.is_topic:
            default_prefetch = QUEUE_PREFETCH
        elif durable_name is not None:
            default_prefetch = DURABLE_TOPIC_PREFETCH
        else:
            default_prefetch = TOPIC_PREFETCH
        consumer = Consumer(
            self.connection_id,
            subscription_id,
            destination,
            ack_mode=AckMode(event.ack),
            prefetch=_int_option(headers, h.ACTIVEMQ_PREFETCH_SIZE, default_prefetch),
            selector=selector,
            priority=_int_option(headers, h.ACTIVEMQ_PRIORITY, 0),
            exclusive=headers.get(h.ACTIVEMQ_EXCLUSIVE, "").lower() == "true",
            no_local=headers.get(h.ACTIVEMQ_NO_LOCAL, "").lower() == "true",
            browser=browser,
            durable_name=durable_name,
            acks_by_message_id=self.version != h.V1_2,
        )
        consumer.extra = {k: v for k, v in headers.items() if k.startswith("activemq.")}
        network = headers.get(h.FERRYMQ_NETWORK_SUBSCRIPTION) == "true"
        if network and self.network_bridge is not None:
            self._make_demand(consumer, headers)
        self._sub_has_id[subscription_id] = event.id is not None
        self._sub_blocks.pop(subscription_id, None)
        if browser:
            # A browser is not a consumer of the queue, but its id is taken until UNSUBSCRIBE,
            # as in ActiveMQ (testQueueBrowerSubscription subscribes again with the same id).
            state = region.connections.get(self.connection_id)
            if subscription_id in self._browsers or (
                state is not None and subscription_id in state.consumers
            ):
                raise BrokerError(f"subscription id {subscription_id!r} is already in use")
            self._browsers.add(subscription_id)
            self._receipt(event.receipt)
            self.service.browse(self, consumer)
            return
        ops_before = len(region.effects.store_ops)
        region.subscribe(consumer, start=False)
        self._receipt(event.receipt, needs_commit=len(region.effects.store_ops) > ops_before)
        region.start_consumer(consumer)

    def _make_demand(self, consumer: Consumer, headers: dict[str, str]) -> None:
        """A bridge's demand subscription: it forwards to another broker, so it carries the
        consumer's broker path (for the advisories other bridges read) and a filter that keeps
        messages off routes they already took or that are too long."""
        consumer.network = True
        path = headers.get(h.FERRYMQ_CONSUMER_PATH, "")
        consumer.broker_path = tuple(p for p in path.split(",") if p)
        ids = headers.get(h.FERRYMQ_NETWORK_CONSUMER_IDS, "")
        consumer.network_consumer_ids = tuple(i for i in ids.split(",") if i)
        target = headers.get(h.FERRYMQ_FORWARD_TO) or self.remote_broker_id
        if target:
            consumer.network_filter = NetworkFilter(
                target,
                _int_option(headers, h.FERRYMQ_MESSAGE_TTL, 1),
                _patterns(headers, h.FERRYMQ_NETWORK_EXCLUDED),
                _patterns(headers, h.FERRYMQ_NETWORK_INCLUDED),
            )

    def _mirror_temporaries(self, destinations: Iterable[Destination]) -> None:
        """bridgeTempDestinations: another broker's temporary destination named by a bridge
        exists here for as long as the bridge's connection (replies cross the network)."""
        for destination in destinations:
            if destination.is_temporary and not self.region.has_destination(destination):
                self.region.create_temporary(self.connection_id, destination)

    def _on_unsubscribe(self, event: Unsubscribe) -> None:
        region = self.region
        if event.id is not None and event.id in self._browsers:
            self._browsers.discard(event.id)
            self._receipt(event.receipt)
            return
        state = region.connections.get(self.connection_id)
        if event.subscription_name is not None:
            region.destroy_durable(self.connection_id, event.subscription_name)
        elif event.id is not None:
            region.unsubscribe(self.connection_id, event.id)
        elif state is not None and event.destination is not None:
            target = f"/subscription-to/{event.destination}"
            if target not in state.consumers:
                destinations, _ = dialect.parse_destinations(event.destination, self.names)
                target = next(
                    (sid for sid, c in state.consumers.items() if c.destination in destinations),
                    target,
                )
            region.unsubscribe(self.connection_id, target)
        self._receipt(event.receipt)

    def _on_disconnect(self, event: Disconnect) -> None:
        self._end_session()
        if event.receipt is not None:
            self._enqueue(self.session.receipt(event.receipt), self.service.last_commit)
        self._close_when_flushed = True
        self._maybe_close()

    # -- pure master/slave replication (the master's side) ------------------------------------

    def _on_replica_frame(self, event: ServerEvent) -> None:
        replica = self._replica
        assert replica is not None
        match event:
            case Ack(id=str(number)) if number.isdigit():
                replica.acknowledged(int(number))
            case Disconnect():
                self._on_disconnect(event)
            case Connect():
                self._on_connect(event)
            case (
                Ack() | Nack() | Send() | Subscribe() | Unsubscribe() | Begin() | Commit() | Abort()
            ):
                raise BrokerError("a replication connection only acknowledges batches")

    def send_replication_batch(self, number: int, data: bytes, reset: bool) -> None:
        """One batch of store operations for the slave (see ``service.replication``)."""
        headers = [
            (h.DESTINATION, "/queue/" + h.REPLICATION_SUBSCRIPTION),
            (h.MESSAGE_ID, str(number)),
            (h.SUBSCRIPTION, h.REPLICATION_SUBSCRIPTION),
            (h.ACK_HEADER, str(number)),
            (h.FERRYMQ_BATCH, str(number)),
        ]
        if reset:
            headers.append((h.FERRYMQ_REPLICATION_RESET, "true"))
        self._enqueue(assemble_message((self._block(headers),), data), None)
        if self.transport is not None:
            self.service.unflushed.add(self.transport)

    def send_cluster_update(self, headers: Mapping[str, str]) -> None:
        """A new broker list for a failover client (``service.cluster``)."""
        if not self.connected or self._ended:
            return
        self._cluster_updates += 1
        frame = [
            (h.DESTINATION, "/topic/" + h.CLUSTER_UPDATES_SUBSCRIPTION),
            (h.MESSAGE_ID, f"{self.connection_id}:cluster:{self._cluster_updates}"),
            (h.SUBSCRIPTION, h.CLUSTER_UPDATES_SUBSCRIPTION),
            *headers.items(),
        ]
        self._enqueue(assemble_message((self._block(frame),), b""), None)
        if self.transport is not None:
            self.service.unflushed.add(self.transport)  # flushed by the ``process`` under way

    # -- deliveries and the outbox ------------------------------------------------------------

    def deliver(self, delivery: Delivery, wait: asyncio.Future[None] | None) -> None:
        consumer = delivery.consumer
        entry = delivery.entry
        if consumer.ack_mode is AckMode.AUTO:
            frame = self._render(consumer, entry.message, None, entry.redelivery_count)
            self._enqueue(frame, wait, delivery, message=True)
        else:
            frame = self._render(consumer, entry.message, delivery.ack_id, entry.redelivery_count)
            self._enqueue(frame, wait, message=True)

    def _render(
        self, consumer: Consumer, message: Message, ack: str | None, redelivery_count: int
    ) -> bytes:
        """A MESSAGE frame: the message's own headers, rendered once per message and STOMP
        version and shared by every delivery of it, plus this delivery's headers."""
        version = self.version
        wire = message.wire
        if wire is not None and wire[0] == version:
            static = wire[1]
        else:
            fast = dialect.standard_block(message, version)
            if fast is not None:
                static = fast
            else:
                static = self._block(dialect.message_headers(message, self.names).items())
            if dialect.renders_alike_for_all(message):
                message.wire = (version, static)
        sub_block = self._sub_blocks.get(consumer.subscription_id)
        if sub_block is None:
            sub_block = self._subscription_block(consumer.subscription_id)
        # Ack ids and counts are digits: no escaping needed, so no header_block here.
        if ack is not None and version == h.V1_2:
            sub_block += b"\nack:" + ack.encode()
        if redelivery_count:
            sub_block += b"\nredelivered:true"
        return assemble_message(
            (static, sub_block, _DELIVERY_COUNT % (redelivery_count + 1)), message.body
        )

    def _subscription_block(self, sub_id: str) -> bytes:
        if not self._sub_has_id.get(sub_id, True):
            block = b""
        else:
            block = self._block([(h.SUBSCRIPTION, sub_id)])
        self._sub_blocks[sub_id] = block
        return block

    def _block(self, items: Iterable[tuple[str, str]]) -> bytes:
        pairs = list(items)
        try:
            return header_block(pairs, self.version)
        except LocalProtocolError:
            # A header this connection's STOMP version cannot carry (a 1.0 subscriber).
            return header_block(
                list(dialect.sanitize_for_version(dict(pairs)).items()), self.version
            )

    def send_browsed(self, consumer: Consumer, message: Message) -> None:
        """One message of a queue browser's snapshot (never acknowledged)."""
        frame = self._render(consumer, message, None, message.redelivery_count)
        self._enqueue(frame, None, message=True)

    def send_browse_end(self, consumer: Consumer) -> None:
        """ActiveMQ ends a browse with an empty MESSAGE carrying ``browser:end``."""
        sub_id = consumer.subscription_id
        headers = [
            (h.DESTINATION, dialect.format_destination(consumer.destination, self.names)),
            (h.MESSAGE_ID, "0"),
            (h.BROWSER, "end"),
        ]
        if self._sub_has_id.get(sub_id, True):
            headers.append((h.SUBSCRIPTION, sub_id))
        self._enqueue(assemble_message((self._block(headers),), b""), None, message=True)

    def _enqueue(
        self,
        data: bytes,
        wait: asyncio.Future[None] | None,
        auto: Delivery | None = None,
        *,
        message: bool = False,
    ) -> None:
        if self.closed or (message and self._ended):
            return
        if wait is not None and wait.done():
            wait = None if wait.exception() is None else wait
        if not self._outbox and wait is None:
            self._write(data, auto)
            return
        self._outbox.append((wait, data, auto, message))
        self._arm()

    def _arm(self) -> None:
        if not self._outbox:
            return
        head_wait = self._outbox[0][0]
        if head_wait is not None and not head_wait.done() and self._armed is not head_wait:
            self._armed = head_wait
            head_wait.add_done_callback(self._on_commit)

    def _on_commit(self, future: asyncio.Future[None]) -> None:
        self._armed = None
        if self.closed:
            return
        self._drain_outbox()
        self.service.process()

    def _drain_outbox(self) -> None:
        outbox = self._outbox
        while outbox:
            wait, data, auto, _ = outbox[0]
            if wait is not None:
                if not wait.done():
                    self._arm()
                    return
                if wait.cancelled() or wait.exception() is not None:
                    # The store failed (its lock was lost, or the disk): the broker stops
                    # serving. What depended on the write is not confirmed, and the connection
                    # closes without an ERROR, as ActiveMQ's does when it stops its connectors:
                    # a failover client takes that for the loss of the broker and replays what
                    # it had in flight on the next one, where an ERROR would be the
                    # application's failure; a plain client sees the broker go away.
                    self.close("the broker's store failed; the operation was not completed")
                    return
            outbox.popleft()
            self._write(data, auto)
        self._maybe_close()

    def _write(self, data: bytes, auto: Delivery | None = None) -> None:
        transport = self.transport
        if transport is None or self.closed:
            return
        transport.write(data)
        self.service.unflushed.add(transport)
        if auto is not None:
            if transport.write_paused:
                self._held_auto.append(auto)
            else:
                self.service.auto_acks.append(auto)

    def _drop_queued_messages(self) -> None:
        """MESSAGE frames not yet written will not be: their deliveries were released."""
        self._outbox = deque(item for item in self._outbox if not item[3])

    def _maybe_close(self) -> None:
        if self._close_when_flushed and not self._outbox and self.transport is not None:
            self.transport.close()

    # -- failures -----------------------------------------------------------------------------

    def _fail(self, message: str, receipt_id: str | None, *, fatal: bool = True) -> None:
        frame = self.session.error(message, receipt_id=receipt_id)
        log.info(
            "connection %s: ERROR %s%s",
            self.connection_id,
            message,
            "" if fatal else " (kept open)",
        )
        if not fatal:
            self._enqueue(frame, None)
            return
        # Frames handled before the fatal one keep their answers: their receipts still go out
        # (after their commit), then the ERROR, then the socket closes.
        self._end_session()
        self._enqueue(frame, None)
        self._close_when_flushed = True
        self._maybe_close()

    def _heart_beat_missed(self) -> None:
        log.info(
            "connection %s: no heart-beat from the client in time; closing", self.connection_id
        )
        if self.transport is not None:
            self.transport.abort()
        self._teardown()

    def _send_keepalive(self) -> None:
        if self.transport is not None and not self._outbox:
            self.transport.write(b"\n")

    def _connect_timeout(self) -> None:
        self._connect_timer = None
        if not self.connected and self.transport is not None:
            log.info(
                "connection %s: no CONNECT within %.0f s; closing",
                self.connection_id,
                CONNECT_TIMEOUT_S,
            )
            self.transport.abort()
            self._teardown()

    def _end_session(self) -> None:
        """Handle no more frames and make the broker forget this connection: its consumers,
        transactions and temporary destinations go, its unacknowledged messages go back."""
        if self._ended:
            return
        self._ended = True
        if self._replica is not None:
            self.service.detach_replica(self._replica)
        if self._monitor is not None:
            self._monitor.stop()
        if self._connect_timer is not None:
            self._connect_timer.cancel()
        self._held_auto.clear()
        self._stalled.clear()
        if self._stall_timer is not None:
            self._stall_timer.cancel()
        self.service.cluster.detach(self)
        self.service.cluster.peer_left(self.connection_id)
        self.service.unregister(self)
        self.region.remove_connection(self.connection_id)
        self._drop_queued_messages()
        self.service.process()

    def _teardown(self) -> None:
        """The socket is gone: forget everything, write nothing more."""
        self._end_session()
        if self.closed:
            return
        self.closed = True
        self._outbox.clear()

    def close(self, reason: str) -> None:
        """The broker closes this connection (shutdown, a store failure)."""
        log.info("connection %s: closing: %s", self.connection_id, reason)
        if self.transport is not None:
            self.transport.close()
        self._teardown()


def _patterns(headers: dict[str, str], name: str) -> tuple[DestinationPattern, ...]:
    text = headers.get(name, "")
    try:
        return tuple(
            DestinationPattern(Destination.parse_qualified(part.strip()))
            for part in text.split(",")
            if part.strip()
        )
    except DestinationError as exc:
        raise BrokerError(f"header {name}: {exc}") from None


def _int_option(headers: dict[str, str], name: str, default: int) -> int:
    value = headers.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value.strip())
    except ValueError:
        raise BrokerError(f"header {name} must be an integer, got {value!r}") from None

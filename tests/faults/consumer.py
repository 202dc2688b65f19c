"""A stomp.py consumer that records every delivery and acks with receipts, across reconnects."""

from __future__ import annotations

from typing import Any

from stomp.exception import NotConnectedException, StompException

from .peers import Delivery, Peer

SUBSCRIPTION_ID = "sub-0"


class Consumer(Peer):
    """Subscribes (again after every reconnect) and records each MESSAGE before acking it.

    Acks carry receipts: an ack the broker receipted is durable (DESIGN.md "Durability
    contract"), so the message must never be delivered again.  ``ack_confirmed`` maps a seq to
    the delivery ordinal at which its ack was confirmed, so a later delivery of it is caught.
    With ``acking`` off the consumer holds what it got, unacked, like a slow application.
    """

    def __init__(
        self,
        port: int,
        destination: str,
        *,
        name: str = "consumer",
        ack_mode: str = "client-individual",
        prefetch: int | None = None,
        client_id: str | None = None,
        subscription_name: str | None = None,
        heartbeats: tuple[int, int] = (0, 0),
        acking: bool = True,
    ) -> None:
        super().__init__(name, port, client_id=client_id, heartbeats=heartbeats)
        self.destination = destination
        self.ack_mode = ack_mode
        self.prefetch = prefetch
        self.subscription_name = subscription_name
        self.acking = acking
        self.deliveries: list[Delivery] = []
        self.subscribed: set[str] = set()
        self.acks_pending: dict[str, list[int]] = {}
        """Receipt id of an ACK -> the seqs it acknowledges (several for a cumulative ack)."""
        self.ack_confirmed: dict[int, int] = {}
        self._unacked: list[tuple[str, Delivery]] = []
        """(ack id, delivery) on the current connection, not acknowledged yet, in order."""

    # -- stomp.py callbacks ------------------------------------------------------------------

    def message(self, generation: int, headers: dict[str, str], body: str) -> None:
        seq_text = headers.get("seq")
        with self.cond:
            delivery = Delivery(
                ordinal=len(self.deliveries),
                seq=int(seq_text) if seq_text is not None and seq_text.isdigit() else None,
                message_id=headers.get("message-id", ""),
                redelivered=headers.get("redelivered") == "true",
                sentinel=headers.get("sentinel"),
                body=body,
                generation=generation,
            )
            self.deliveries.append(delivery)
            ack_id = headers.get("ack")
            current = generation == self.generation
            if ack_id is not None and current:
                self._unacked.append((ack_id, delivery))
            ack_now = self.acking and current and ack_id is not None
            self.cond.notify_all()
        if ack_now:
            self.ack_through(delivery.ordinal)

    def receipt(self, receipt_id: str) -> None:
        with self.cond:
            if receipt_id.startswith("sub-"):
                self.subscribed.add(receipt_id)
            for seq in self.acks_pending.pop(receipt_id, []):
                self.ack_confirmed.setdefault(seq, len(self.deliveries))
            self.cond.notify_all()

    # -- the test's side ---------------------------------------------------------------------

    def opened(self, conn: Any, deadline: float) -> None:
        with self.cond:
            receipt = f"sub-{self.generation}"
            # The old connection's ack ids died with it; its unreceipted acks may be lost.
            self._unacked.clear()
            self.acks_pending.clear()
        headers: dict[str, str] = {}
        if self.prefetch is not None:
            headers["activemq.prefetchSize"] = str(self.prefetch)
        if self.subscription_name is not None:
            headers["activemq.subscriptionName"] = self.subscription_name
        conn.subscribe(
            self.destination,
            id=SUBSCRIPTION_ID,
            ack=self.ack_mode,
            headers=headers,
            receipt=receipt,
        )
        self.wait_for(
            lambda: receipt in self.subscribed or not self.connected,
            deadline,
            "the SUBSCRIBE receipt",
        )
        if not self.is_connected():
            raise NotConnectedException()

    def ack_through(self, ordinal: int) -> None:
        """Ack the delivery with this ordinal: alone (client-individual) or with all before it."""
        with self.cond:
            index = next(
                (i for i, (_, d) in enumerate(self._unacked) if d.ordinal == ordinal), None
            )
            if index is None:
                return  # delivered on a connection that is gone; its ack id means nothing now
            ack_id, delivery = self._unacked[index]
            if self.ack_mode == "client":
                covered = [d for _, d in self._unacked[: index + 1]]
                del self._unacked[: index + 1]
            else:
                covered = [delivery]
                del self._unacked[index]
            receipt = f"ack-{ordinal}"
            self.acks_pending[receipt] = [d.seq for d in covered if d.seq is not None]
            conn = self.conn
        try:
            conn.ack(ack_id, receipt=receipt)
        except (StompException, OSError):
            with self.cond:
                self.acks_pending.pop(receipt, None)

    def start_acking(self) -> None:
        """Ack everything held on the current connection and every later delivery."""
        with self.cond:
            self.acking = True
            held = [d.ordinal for _, d in self._unacked]
        if held:
            if self.ack_mode == "client":
                self.ack_through(held[-1])
            else:
                for ordinal in held:
                    self.ack_through(ordinal)

    def delivered_count(self) -> int:
        with self.cond:
            return len(self.deliveries)

    def wait_delivered(self, count: int, deadline: float) -> None:
        self.wait_for(lambda: len(self.deliveries) >= count, deadline, f"{count} deliveries")

    def wait_sentinel(self, name: str, deadline: float) -> None:
        self.wait_for(
            lambda: any(d.sentinel == name for d in self.deliveries),
            deadline,
            f"sentinel {name} ({len(self.deliveries)} deliveries so far)",
        )

    def wait_acks_confirmed(self, deadline: float) -> None:
        self.wait_for(lambda: not self.acks_pending, deadline, "receipts for every ACK")

    def close(self, timeout_s: float = 5.0) -> None:
        super().close(timeout_s)
        with self.cond:
            # Receipts come in order, so an ack still unreceipted after DISCONNECT's receipt
            # raced it: the broker may have dropped it, and may redeliver (flagged).
            self.acks_pending.clear()
            self._unacked.clear()

    def reconnect(self, deadline: float) -> None:
        """After the broker died: notice it, then connect and subscribe again."""
        self.wait_disconnected(deadline)
        self.open(deadline)

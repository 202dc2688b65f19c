"""Artemis's AMQP broker connections: connections this broker opens to other AMQP 1.0
endpoints, with mirrors, senders, receivers, peers and federation on them
(docs/broker-connections.md)."""

"""Protocol adapters: each wire protocol the broker serves, on top of the protocol-neutral service.

``stomp``: STOMP 1.0-1.2 in ActiveMQ's dialect (the ``tcp://``, ``stomp://`` and ``nio``
listeners and ``vm://``).  An adapter implements ``service.adapter.ProtocolConverter`` for one
connection and ``service.listeners.ProtocolAdapter`` for its listeners (docs/architecture.md).
"""

"""AMQP 1.0, sans-IO: bytes in, events out, bytes back.

python-qpid-proton's engine (``Connection``, ``Transport``, ``Collector``: C, no I/O of its own)
keeps the protocol's state machines (sessions and their windows, link credit and drain,
settlement, multi-frame transfers, detach and close with their error conditions). FerryMQ adds
what the engine lacks on a server: a SASL layer of its own (``sasl``: proton's server side can
only offer ANONYMOUS without Cyrus SASL), and the codes of the AMQP specification and of the Qpid
JMS mapping the broker speaks (``codes``). Nothing here reads a clock or a socket; the broker's
adapter (``ferrymq.adapters.amqp``) and the client's transport drive it.
"""

"""The broker's domain, synchronous and deterministic: it decides, the service does.

``region.RegionBroker`` (ActiveMQ's RegionBroker) holds the registries and takes the commands of
every protocol, each returning an ``outcome.Outcome``; what a batch decided leaves through
``RegionBroker.drain`` as ``effects.Effects``. Its parts share a ``context.CoreContext``:
``destinations`` (queues and topics as a whole), ``routing`` (the send path: duplicates,
scheduling, fan-out), ``queue`` (ActiveMQ's Queue, also a topic subscription's pending list),
``topic`` and ``subscriptions``, ``dispatch`` (delivery, expiry, dead letters), ``consumers``,
``ledger`` (acks and transactions), ``advisory``, ``scheduler`` and ``statistics``. Messages are
``message.Message``; one waiting in one container is an ``entry.Entry`` (ActiveMQ's
MessageReference). ``selector`` is the JMS selector language.
"""

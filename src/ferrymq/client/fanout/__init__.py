"""``fanout:(agentURI)?options``: a producer connected to every broker an agent announces.

Seed 001 §8.3 and ActiveMQ's FanoutTransport (reference §3.6); the URL forms are
``fanout:(AGENT)?options``, ``fanout://(AGENT)?options`` and, without options, ``fanout:AGENT``.
Each announced broker is a *member* with its own connection and its own reconnect loop, with
Table 8.2's back-off (``options``, ``member``); the ``ledger`` decides, purely, where each
command goes and when its receipt is due; the ``transport`` connects, writes and reports, and
``urls`` checks a whole URL before anything starts:

* topic SENDs go to every connected member, queue SENDs to the *primary* only unless
  ``fanOutQueues``; BEGIN, COMMIT, ABORT and DISCONNECT to every member (a transaction's
  commands to the members that took its BEGIN); SUBSCRIBE, UNSUBSCRIBE, ACK and NACK to the
  primary only (the seed warns against consumers on fanout);
* nothing is written until ``minAckCount`` members are connected (DISCONNECT excepted);
  a receipt is answered once ``minAckCount`` members confirmed a SEND outside a transaction,
  once every member it went to confirmed anything else, and an ERROR from one fails it;
* a member that drops reconnects with back-off, and the agent removing a broker closes it; a
  SEND a lost member had not confirmed is written again to the next member that can confirm it
  while it is short of confirmations (the same broker when it is back: its duplicate detection
  drops a copy it stored). Otherwise a member that connects late gets nothing sent before it
  came (seed "Minimum number of brokers");
* when the primary is lost, the next connected member becomes primary: the subscriptions are
  written to it, the connection hears ``on_transport_interrupted``/``_resumed``, and acks from
  before are stale. A transaction that lost a member is rolled back at COMMIT.

Each broker's copy of a fanned-out SEND carries its own ``ferrymq.producer-message-id``
(``<id>@host:port``): the copies are distinct messages, as in ActiveMQ, so brokers that are
also networked deliver each of them (seed "Using fanout with a broker network": four brokers,
four copies).
"""

from ferrymq.client.fanout.ledger import FanoutLedger, fans_out
from ferrymq.client.fanout.options import FanoutOptions, fanout_options
from ferrymq.client.fanout.transport import FanoutTransport
from ferrymq.client.fanout.urls import fanout_transport

__all__ = [
    "FanoutLedger",
    "FanoutOptions",
    "FanoutTransport",
    "fanout_options",
    "fanout_transport",
    "fans_out",
]

"""Sans-IO STOMP 1.0/1.1/1.2 in ActiveMQ's dialect: parser, encoder, negotiation, sessions."""

from ferrymq.stomp.client import ClientSession, ClientState
from ferrymq.stomp.constants import SUPPORTED_VERSIONS, V1_0, V1_1, V1_2
from ferrymq.stomp.encoder import (
    HEARTBEAT_BYTES,
    assemble_message,
    encode,
    encode_frame,
    encode_message,
    header_block,
)
from ferrymq.stomp.errors import LocalProtocolError, RemoteProtocolError
from ferrymq.stomp.events import (
    Abort,
    Ack,
    Begin,
    ClientEvent,
    Commit,
    Connect,
    Connected,
    Disconnect,
    ErrorEvent,
    MessageEvent,
    Nack,
    ReceiptEvent,
    Send,
    ServerEvent,
    Subscribe,
    Unsubscribe,
)
from ferrymq.stomp.frame import HEARTBEAT, Frame, HeartBeat
from ferrymq.stomp.limits import DEFAULT_LIMITS, Limits
from ferrymq.stomp.negotiation import (
    HeartBeatTiming,
    format_heart_beat,
    mirror_heart_beat,
    negotiate_heart_beat,
    negotiate_version,
    parse_heart_beat,
)
from ferrymq.stomp.parser import FrameParser
from ferrymq.stomp.session import ServerSession, State

__all__ = [
    "DEFAULT_LIMITS",
    "HEARTBEAT",
    "HEARTBEAT_BYTES",
    "SUPPORTED_VERSIONS",
    "V1_0",
    "V1_1",
    "V1_2",
    "Abort",
    "Ack",
    "Begin",
    "ClientEvent",
    "ClientSession",
    "ClientState",
    "Commit",
    "Connect",
    "Connected",
    "Disconnect",
    "ErrorEvent",
    "Frame",
    "FrameParser",
    "HeartBeat",
    "HeartBeatTiming",
    "Limits",
    "LocalProtocolError",
    "MessageEvent",
    "Nack",
    "ReceiptEvent",
    "RemoteProtocolError",
    "Send",
    "ServerEvent",
    "ServerSession",
    "State",
    "Subscribe",
    "Unsubscribe",
    "assemble_message",
    "encode",
    "encode_frame",
    "encode_message",
    "format_heart_beat",
    "header_block",
    "mirror_heart_beat",
    "negotiate_heart_beat",
    "negotiate_version",
    "parse_heart_beat",
]

"""ActiveMQ-style URIs: the forms the seeds use, errors with positions, and print/parse identity."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.util.uri import COMPOSITE_SCHEMES, URI, AnyURI, CompositeURI, URIError, parse_uri


def test_plain_uri() -> None:
    uri = parse_uri("tcp://0.0.0.0:61616?maximumConnections=1000&wireFormat.maxFrameSize=104857600")
    assert uri == URI(
        "tcp",
        "0.0.0.0",
        61616,
        query={"maximumConnections": "1000", "wireFormat.maxFrameSize": "104857600"},
    )
    assert isinstance(uri, URI)
    assert list(uri.query) == ["maximumConnections", "wireFormat.maxFrameSize"]
    assert (
        uri.raw == "tcp://0.0.0.0:61616?maximumConnections=1000&wireFormat.maxFrameSize=104857600"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("multicast://default?group=x", URI("multicast", "default", query={"group": "x"})),
        (
            "multicast://224.1.2.3:6255?group=mygroupname",
            URI("multicast", "224.1.2.3", 6255, query={"group": "mygroupname"}),
        ),
        ("zeroconf://NEGroup", URI("zeroconf", "NEGroup")),
        ("vm://local?create=false", URI("vm", "local", query={"create": "false"})),
        ("tcp://[::1]:61616", URI("tcp", "::1", 61616)),
        ("file:///etc/brokers.txt", URI("file", "", path="/etc/brokers.txt")),
        ("tcp://user:pw@h:1/path", URI("tcp", "h", 1, "/path", userinfo="user:pw")),
        ("mailbox:inbox", URI("mailbox", None, path="inbox")),
    ],
)
def test_plain_forms(text: str, expected: URI) -> None:
    assert parse_uri(text) == expected
    assert str(parse_uri(text)) == text


def _tcp(host: str, port: int) -> URI:
    return URI("tcp", host, port)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # seed 001 Example 2.1
        ("static:(tcp://localhost:61002)", CompositeURI("static", (_tcp("localhost", 61002),))),
        # seed 000 Example 4.1
        (
            "masterslave:(tcp://masterHost:61002,tcp://slaveHost:61002)",
            CompositeURI("masterslave", (_tcp("masterHost", 61002), _tcp("slaveHost", 61002))),
        ),
        # seed 002 Example 4.8: the query belongs to the failover member, as in ActiveMQ
        (
            "static:failover:(tcp://masterHost:61002,tcp://slaveHost:61002)?maxReconnectAttempts=0",
            CompositeURI(
                "static",
                (
                    CompositeURI(
                        "failover",
                        (_tcp("masterHost", 61002), _tcp("slaveHost", 61002)),
                        {"maxReconnectAttempts": "0"},
                    ),
                ),
                parenthesised=False,
            ),
        ),
        (
            "failover:(tcp://a:1,tcp://b:2)?randomize=false",
            CompositeURI("failover", (_tcp("a", 1), _tcp("b", 2)), {"randomize": "false"}),
        ),
        (
            "failover:tcp://a:1,tcp://b:2",
            CompositeURI("failover", (_tcp("a", 1), _tcp("b", 2)), parenthesised=False),
        ),
        (
            "discovery:(multicast://default)?initialReconnectDelay=100",
            CompositeURI(
                "discovery", (URI("multicast", "default"),), {"initialReconnectDelay": "100"}
            ),
        ),
        # seed 002's older spelling with slashes
        (
            "discovery://(static://(tcp://localhost:61716,tcp://localhost:61816))",
            CompositeURI(
                "discovery",
                (
                    CompositeURI(
                        "static", (_tcp("localhost", 61716), _tcp("localhost", 61816)), slashes=True
                    ),
                ),
                slashes=True,
            ),
        ),
        (
            "fanout:(static:(tcp://a:1,tcp://b:2))?minAckCount=2",
            CompositeURI(
                "fanout",
                (CompositeURI("static", (_tcp("a", 1), _tcp("b", 2))),),
                {"minAckCount": "2"},
            ),
        ),
        (
            "failover:()?updateURIsURL=file:///x",
            CompositeURI("failover", (), {"updateURIsURL": "file:///x"}),
        ),
    ],
)
def test_composite_forms(text: str, expected: CompositeURI) -> None:
    parsed = parse_uri(text)
    assert parsed == expected
    assert str(parsed) == text


def test_query_values_are_decoded_like_javas_url_decoder() -> None:
    uri = parse_uri("tcp://h:1?jms.clientID=a+b%2Bc&empty=&flag")
    assert dict(uri.query) == {"jms.clientID": "a b+c", "empty": "", "flag": ""}


def test_nested_query_values_are_encoded_so_commas_do_not_split_members() -> None:
    composite = CompositeURI("failover", (URI("tcp", "a", 1, query={"x": "1,2"}), _tcp("b", 2)))
    text = str(composite)
    assert text == "failover:(tcp://a:1?x=1%2C2,tcp://b:2)"
    assert parse_uri(text) == composite


@pytest.mark.parametrize(
    ("text", "position", "part", "message"),
    [
        ("tcp//x", 0, "tcp//x", "missing scheme"),
        ("tcp://h:61x", 8, "61x", "port is not a number"),
        ("tcp://h:70000", 8, "70000", "port out of range"),
        ("failover:(tcp://a:1", 9, "(", "unbalanced parenthesis"),
        ("failover:(tcp://a:1,,tcp://b:2)", 20, ",", "empty member"),
        ("failover:(tcp://a:1)x", 20, "x", "unexpected text after ')'"),
        ("failover:(tcp://a:1,b)", 20, "b", "missing scheme"),
        ("tcp://h:1?a=1&a=2", 14, "a=2", "given twice"),
        ("tcp://h:1?=v", 10, "=v", "without a name"),
        ("tcp://h :1", 7, " ", "whitespace"),
        ("tcp://h(1):2", 7, "(", "unexpected '('"),
        ("", 0, "", "empty URI"),
    ],
)
def test_errors_name_the_part_and_position(
    text: str, position: int, part: str, message: str
) -> None:
    with pytest.raises(URIError) as caught:
        parse_uri(text)
    error = caught.value
    assert (error.position, error.part) == (position, part)
    assert message in str(error)
    assert f"position {position}" in str(error)


# -- printing then parsing is the identity -------------------------------------------------------

_NAME = st.from_regex(r"[a-z][a-z0-9]{0,6}(\+[a-z]{1,4})?", fullmatch=True).filter(
    lambda s: s not in COMPOSITE_SCHEMES
)
_HOST = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9.\-]{0,12}", fullmatch=True)
_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
_QUERY = st.dictionaries(_TEXT.filter(bool), _TEXT, max_size=3)
_PATH = st.from_regex(r"(/[A-Za-z0-9._~\-]{0,6}){0,3}", fullmatch=True)


@st.composite
def _plain(draw: st.DrawFn) -> URI:
    scheme = draw(_NAME)
    if draw(st.booleans()):
        host = draw(_HOST | st.just("::1"))
        port = draw(st.none() | st.integers(0, 65535))
        return URI(scheme, host, port, draw(_PATH), draw(_QUERY))
    opaque = draw(st.from_regex(r"[A-Za-z0-9._~\-][A-Za-z0-9._~\-/]{0,8}", fullmatch=True))
    return URI(scheme, None, None, opaque, draw(_QUERY))


def _composite(members: st.SearchStrategy[list[AnyURI]]) -> st.SearchStrategy[CompositeURI]:
    return st.builds(
        CompositeURI,
        st.sampled_from(sorted(COMPOSITE_SCHEMES)) | _NAME,
        members.map(tuple),
        _QUERY,
        st.booleans(),
        st.booleans(),
    )


_ANY: st.SearchStrategy[AnyURI] = st.recursive(
    _plain(), lambda inner: _composite(st.lists(inner, max_size=3)), max_leaves=8
)


@given(_ANY)
def test_print_then_parse_is_the_identity(uri: AnyURI) -> None:
    assert parse_uri(str(uri)) == uri


@given(_ANY)
def test_printing_is_stable(uri: AnyURI) -> None:
    text = str(uri)
    assert str(parse_uri(text)) == text

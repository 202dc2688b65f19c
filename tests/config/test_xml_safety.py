"""activemq.xml is parsed safely: no entity expansion, no external entities, but line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.config import ConfigError, load_config, parse_config

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
  <!ENTITY lol "lol">
  <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<broker brokerName="&lol9;"/>
"""


def test_billion_laughs_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "activemq.xml"
    path.write_text(BILLION_LAUGHS)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.source == str(path)
    assert caught.value.line == 3
    assert "entity declarations are not allowed (<!ENTITY lol>)" in str(caught.value)


def test_external_entity_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    text = (
        f'<?xml version="1.0"?>\n<!DOCTYPE b [<!ENTITY x SYSTEM "file://{secret}">]>\n'
        '<broker brokerName="&x;"/>'
    )
    with pytest.raises(ConfigError, match="not allowed") as caught:
        parse_config(text, "activemq.xml")
    assert "s3cret" not in str(caught.value)


def test_an_undeclared_entity_is_not_well_formed() -> None:
    with pytest.raises(ConfigError, match=r"not well-formed.*undefined entity") as caught:
        parse_config('<broker>\n<services brokerName="&x;"/></broker>', "a.xml")
    assert caught.value.line == 2


def test_an_external_dtd_is_refused_but_a_plain_doctype_is_fine() -> None:
    text = (
        '<!DOCTYPE beans PUBLIC "-//SPRING//DTD BEAN//EN" '
        '"http://www.springframework.org/dtd/spring-beans.dtd">\n<beans><broker/></beans>'
    )
    with pytest.raises(ConfigError, match="external references are not allowed"):
        parse_config(text)
    assert parse_config("<!DOCTYPE beans>\n<beans><broker/></beans>").broker_name == "localhost"


def test_syntax_errors_carry_the_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config("<broker>\n\n  <transportConnectors>\n</broker>", "activemq.xml")
    assert caught.value.line == 4
    assert str(caught.value).startswith("activemq.xml:4: not well-formed XML: mismatched tag")


def test_declared_encoding_of_a_file_is_honoured(tmp_path: Path) -> None:
    path = tmp_path / "latin1.xml"
    path.write_bytes(
        '<?xml version="1.0" encoding="ISO-8859-1"?><broker brokerName="Zürich"/>'.encode("latin-1")
    )
    assert load_config(path).broker_name == "Zürich"
    assert (
        parse_config(
            '<?xml version="1.0" encoding="ISO-8859-1"?><broker brokerName="Zürich"/>'
        ).broker_name
        == "Zürich"
    )

"""Write src/ferrymq/config/activemq_names.json: the element and attribute names of ActiveMQ 5.x.

Source: `activemq.xsd`, the XBean schema inside `activemq-spring.jar` (Debian's libactivemq-java
package, ActiveMQ 5.17.2: `/usr/share/java/activemq-spring.jar`). Only names are kept, never the
schema's text: for each element, its attributes and its child (property) elements, and for each
property the elements it may hold ("#bean" where the schema admits a Spring bean, "*" where it
admits any content). The loader uses them to tell a valid ActiveMQ setting that FerryMQ ignores
(a warning) from a typo (an error).

    python tools/activemq_schema_names.py [path/to/activemq-spring.jar]
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

from defusedxml import ElementTree

XS = "{http://www.w3.org/2001/XMLSchema}"
DEFAULT_JAR = Path("/usr/share/java/activemq-spring.jar")
OUTPUT = Path(__file__).resolve().parents[1] / "src" / "ferrymq" / "config" / "activemq_names.json"


def _property_content(prop: ElementTree.Element) -> list[str]:
    refs = sorted({e.get("ref", "").rpartition(":")[2] for e in prop.iter(f"{XS}element")} - {""})
    for any_element in prop.iter(f"{XS}any"):
        # namespace="##other" admits a Spring bean; an unrestricted xs:any admits anything.
        refs.append("#bean" if any_element.get("namespace") == "##other" else "*")
    if prop.find(f".//{XS}complexType") is None:
        refs.append("*")
    return sorted(set(refs))


def names(schema: bytes) -> dict[str, dict[str, object]]:
    root = ElementTree.fromstring(schema)
    elements: dict[str, dict[str, object]] = {}
    for element in root.findall(f"{XS}element"):
        complex_type = element.find(f"{XS}complexType")
        attributes: list[str] = []
        children: dict[str, list[str]] = {}
        if complex_type is not None:
            attributes = sorted(a.get("name", "") for a in complex_type.findall(f"{XS}attribute"))
            for choice in complex_type.iter(f"{XS}choice"):
                for prop in choice.findall(f"{XS}element"):
                    if prop.get("name"):
                        children[prop.get("name", "")] = _property_content(prop)
        elements[element.get("name", "")] = {"attributes": attributes, "children": children}
    return dict(sorted(elements.items()))


def main(argv: list[str]) -> None:
    jar = Path(argv[0]) if argv else DEFAULT_JAR
    with zipfile.ZipFile(jar) as archive:
        schema = archive.read("activemq.xsd")
    elements = names(schema)
    document = {
        "about": (
            "Element and attribute names of ActiveMQ 5.x's activemq.xml schema, extracted by "
            "tools/activemq_schema_names.py from activemq.xsd in activemq-spring.jar (Apache "
            "ActiveMQ 5.17.2, Apache License 2.0, as packaged by Debian's libactivemq-java)."
        ),
        "elements": elements,
    }
    OUTPUT.write_text(json.dumps(document, indent=0, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{OUTPUT}: {len(elements)} elements")


if __name__ == "__main__":
    main(sys.argv[1:])

"""The committed vocabulary is what `tools/activemq_schema_names.py` extracts from ActiveMQ's
own schema (Debian's libactivemq-java, installed by `make system-deps`), and the loader judges
names by it."""

from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from ferrymq.config import schema

ROOT = Path(__file__).resolve().parents[2]
JAR = Path("/usr/share/java/activemq-spring.jar")


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "activemq_schema_names", ROOT / "tools" / "activemq_schema_names.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_names_are_the_schemas() -> None:
    if not JAR.is_file():
        pytest.fail(f"{JAR} is missing: install Debian's libactivemq-java (make system-deps)")
    with zipfile.ZipFile(JAR) as archive:
        extracted = _tool().names(archive.read("activemq.xsd"))
    committed = ROOT / "src" / "ferrymq" / "config" / "activemq_names.json"
    assert json.loads(committed.read_text("utf-8"))["elements"] == extracted, (
        "regenerate with: python tools/activemq_schema_names.py"
    )


def test_names_are_judged_by_the_schema() -> None:
    assert schema.is_activemq_attribute("kahaDB", "enableIndexWriteAsync")
    assert not schema.is_activemq_attribute("kahaDB", "enableIndexWriteAsinc")
    assert schema.is_activemq_child("policyEntry", "pendingSubscriberPolicy")
    assert schema.is_activemq_child("pendingSubscriberPolicy", "vmCursor")
    assert schema.is_activemq_child("managementContext", "property")  # Spring, anywhere
    assert not schema.is_activemq_child("broker", "transportConector")
    assert schema.is_transport_option("transport.closeAsync")
    assert schema.is_transport_option("wireFormat.cacheEnabled")
    assert not schema.is_transport_option("transport.closeAsinc")
    assert schema.closest("transportConector", schema.known_children("broker")) == (
        "transportConnectors"
    )
    assert schema.closest("transportConector", {"transportConnector"}) == "transportConnector"

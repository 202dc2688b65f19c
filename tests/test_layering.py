"""The layers of DESIGN.md, enforced: who may import whom, what stays pure, and no import cycles.

The rules read the source with ``ast``. An import inside a function or under ``if TYPE_CHECKING:``
counts as much as one at the top, because it ties the two modules together for a reader and for
the next refactoring just the same. ``from ferrymq import x`` and relative imports are resolved to
the module they name. Importing ``a.b.c`` is an edge to ``a.b.c`` alone, not to the packages
around it, so a package ``__init__`` that re-exports its modules makes no cycle by itself.

Where the tree does not hold a rule yet (issue 14 is restructuring it), the exception is a
constant that names today's offenders exactly. Each such test fails on an offender missing from
its list and on a listed one that is gone, so the lists cannot go stale: they only shrink, and
the failure message prints the value to paste.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Collection, Iterable, Set
from pathlib import Path

import pytest

import ferrymq.client
import ferrymq.stomp

SRC = Path(__file__).resolve().parents[1] / "src" / "ferrymq"

# What each layer may import besides itself: a package, a subpackage or a single module, named
# below ``ferrymq``. The root package (``ferrymq/__init__.py``, the version) is open to all.
ALLOWED: dict[str, frozenset[str]] = {
    "util": frozenset(),
    "stomp": frozenset(),
    "amqp": frozenset({"util.text"}),  # pure text helpers
    "core": frozenset({"store.base", "security.api"}),  # store records, the security contract
    # Pure decisions: who a connection is, what it may do (DESIGN.md "security").
    "security": frozenset({"config", "core.destination", "util"}),
    "store": frozenset({"util.uri"}),  # one password redaction for every URL
    "transport": frozenset({"util"}),  # the heart-beat watchdog
    "config": frozenset({"util"}),
    "client": frozenset({"stomp", "amqp", "util"}),
    # A protocol adapter sits above the service: it turns one wire protocol into service calls.
    "adapters": frozenset(
        {
            "service",
            "core",
            "stomp",
            "amqp",
            "store.base",
            "transport",
            "config",
            "security",
            "util",
        }
    ),
    "service": frozenset({"core", "store", "transport", "config", "security", "util"}),
    "admin": frozenset({"core", "config", "security", "util"}),
    "bench": frozenset({"stomp", "amqp", "util", "client"}),
    "network": frozenset({"client", "config", "stomp", "util", "core.destination"}),
    # Artemis's broker connections: AMQP in client mode to the remote, the client library
    # (vm://) to their own broker, as a network bridge does.
    "connections": frozenset({"amqp", "client", "config", "stomp", "util", "core.destination"}),
    "discovery": frozenset({"client", "util"}),
    "spark": frozenset({"client", "stomp", "util"}),
    # Lockers (shared file, database lease) and the slave side of pure master/slave, which
    # speaks STOMP to its master and applies the store's operation log: never the service.
    "ha": frozenset({"config", "store", "stomp", "util"}),
    # The admin API's view of a running broker, read through admin.source's protocol.
    "admin_view": frozenset({"admin", "core", "ha", "network", "service"}),
    # Composition roots: they wire everything together, but never ship test fixtures.
    "broker": frozenset(
        {
            "adapters",
            "admin",
            "admin_view",
            "config",
            "discovery",
            "connections",
            "ha",
            "network",
            "security",
            "service",
            "store",
            "util",
        }
    ),
    # An application's broker (docs/embedding.md): the composition root, started from a config,
    # and the vm:// registry it checks names in.
    "embedded": frozenset({"broker", "config", "service.errors", "util"}),
    "cli": frozenset(
        # security: `ferrymq hash-password` hashes as the broker verifies.
        {
            "bench",
            "broker",
            "client",
            "config",
            "ha",
            "security",
            "service",
            "spark",
            "transport",
            "util",
        }
    ),
    "testing": frozenset(
        {"broker", "client", "config", "core", "embedded", "service", "stomp", "store", "util"}
    ),
}
# Ruled before it exists, so its first module lands under its rule.
PLANNED: frozenset[str] = frozenset()

# Wire protocols, and the layers that must know none of them (DESIGN.md: "the service imports
# none of them"; protocol adapters live in ``adapters`` above it).
PROTOCOLS = ("stomp", "amqp")
PROTOCOL_NEUTRAL = ("service", "core")
# Sans-IO and deterministic: no I/O, clock, randomness, threads, logging, files or database.
PURE = ("stomp", "amqp", "core", "security.api")
IMPURE = frozenset(
    {
        "asyncio",
        "logging",
        "os",
        "random",
        "selectors",
        "socket",
        "sqlite3",
        "ssl",
        "threading",
        "time",
    }
)


# What a third-party engine loads by itself when a pure package imports it: ``import proton``
# runs proton's package, which imports its reactor (sockets, selectors, threads, logging) even
# though ``ferrymq.amqp`` calls only its engine, which does no I/O. The static test still holds
# FerryMQ's own modules to the rule.
ENGINE_LOADS: dict[str, frozenset[str]] = {
    "amqp": frozenset({"logging", "selectors", "socket", "threading"}),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def resolve_imports(
    module: str, source: str, *, is_package: bool, known: Collection[str]
) -> set[str]:
    """Every absolute module name ``source`` imports, at any depth of its tree."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.update(resolve_from(module, node, is_package=is_package, known=known))
    return found


def resolve_from(
    module: str, node: ast.ImportFrom, *, is_package: bool, known: Collection[str]
) -> set[str]:
    """``from p import x`` names the module ``p.x`` when there is one (``known``), else ``p``."""
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = ".".join(package[: len(package) - node.level + 1])
        base = f"{anchor}.{base}" if base else anchor
    return {
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names
    }


@functools.cache
def imports_of(module: str) -> frozenset[str]:
    path = MODULES[module]
    return frozenset(
        resolve_imports(
            module, path.read_text(), is_package=path.name == "__init__.py", known=MODULES
        )
    )


def ferrymq_imports(module: str) -> set[str]:
    """The FerryMQ modules ``module`` imports, other than itself."""
    found = set()
    for name in imports_of(module):
        while name not in MODULES and "." in name:
            name = name.rpartition(".")[0]
        if name in MODULES and name != module:
            found.add(name)
    return found


def layer(module: str) -> str:
    """``ferrymq.core.region`` -> ``core``; ``ferrymq.broker`` -> ``broker``."""
    return module.removeprefix("ferrymq.").split(".")[0] if module != "ferrymq" else ""


def within(module: str, prefixes: Iterable[str]) -> bool:
    relative = module.removeprefix("ferrymq.")
    return any(relative == p or relative.startswith(p + ".") for p in prefixes)


def modules_of(*layers: str) -> list[str]:
    return [module for module in MODULES if layer(module) in layers]


def import_cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module: modules that reach each other."""
    reach = {module: reachable(graph, module) for module in graph}
    components = (
        frozenset({module} | {other for other in reach[module] if module in reach[other]})
        for module in graph
    )
    return {component for component in components if len(component) > 1}


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def assert_matches_allow_list(name: str, found: Set[object], listed: Set[object]) -> None:
    """Fail on a new offender and on a listed one that is gone, printing the value to paste."""
    assert found == listed, (
        f"{name} is out of date: it names today's offenders exactly, and only shrinks.\n"
        f"not listed: {literal(found - listed)}\nlisted but gone: {literal(listed - found)}\n"
        f"the tree today: {name} = {literal(found)}"
    )


def literal(items: Set[object]) -> str:
    """``items`` as a Python literal that can be pasted back into this file."""

    def one(item: object) -> str:
        if isinstance(item, frozenset):
            return f"frozenset({{{', '.join(repr(name) for name in sorted(item))}}})"
        return repr(item)

    body = "".join(f"\n    {one(item)}," for item in sorted(items, key=one))
    return f"frozenset({{{body}\n}})" if items else "frozenset()"


# -- the walker itself ----------------------------------------------------------------------------


def test_the_walker_resolves_every_form_of_import() -> None:
    known = {"ferrymq", "ferrymq.core", "ferrymq.core.region", "ferrymq.service", "ferrymq.stomp"}
    source = (
        "import ferrymq.stomp\n"
        "from ferrymq import service, __version__\n"
        "from . import region\n"
        "from .. import stomp\n"
        "from .region import RegionBroker\n"
        "if TYPE_CHECKING:\n    from time import monotonic\n"
        "def later() -> None:\n    import os.path\n"
    )
    found = resolve_imports("ferrymq.core.queue", source, is_package=False, known=known)
    assert found == {
        "ferrymq.stomp",
        "ferrymq.service",
        "ferrymq",
        "ferrymq.core.region",
        "time",
        "os.path",
    }
    in_package = resolve_imports(
        "ferrymq.core", "from . import region\n", is_package=True, known=known
    )
    assert in_package == {"ferrymq.core.region"}


def test_the_cycle_finder_reports_each_component_whole() -> None:
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a", "f"}}
    assert import_cycles(graph) == {frozenset("abc"), frozenset("de")}


def test_every_layer_is_ruled() -> None:
    layers = {layer(module) for module in MODULES} - {""}
    assert layers - set(ALLOWED) == set(), "add a rule to ALLOWED for each new package"
    assert set(ALLOWED) - layers - PLANNED == set(), "a rule for a package that is gone"
    assert ferrymq_imports("ferrymq") == set(), "the root package holds only the version"
    assert len(modules_of("stomp")) >= 12, "the walk found the source tree"


# -- direction of imports -------------------------------------------------------------------------


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_lower_layers(package: str) -> None:
    allowed = ALLOWED[package] | {package}
    offences = []
    for module in modules_of(package):
        for target in ferrymq_imports(module):
            if target == "ferrymq" or within(target, allowed):
                continue
            offences.append(f"{module} imports {target}")
    assert offences == []


def test_service_and_core_know_no_wire_protocol() -> None:
    importers = {
        module
        for module in modules_of(*PROTOCOL_NEUTRAL)
        if any(within(target, PROTOCOLS) for target in ferrymq_imports(module))
    }
    assert importers == set(), "protocol adapters belong in ferrymq.adapters, above the service"


# -- purity ---------------------------------------------------------------------------------------


def test_protocols_and_core_do_no_io() -> None:
    offences = [
        f"{module} imports {name}"
        for module in modules_of(*PURE)
        for name in sorted(imports_of(module))
        if name.split(".")[0] in IMPURE
    ]
    assert offences == []


@pytest.mark.parametrize("package", PURE)
def test_importing_a_pure_package_loads_no_io(package: str) -> None:
    """What importing the package really loads, with everything it pulls in transitively.

    A fresh interpreter, so modules other tests imported do not count. ``os`` and ``time`` are
    loaded at start-up by the interpreter itself, so only the static test above sees those.
    """
    modules = modules_of(package)
    code = (
        "import sys\nbefore = set(sys.modules)\n"
        + "".join(f"import {name}\n" for name in modules)
        + f"print(sorted((set(sys.modules) - before) & set({sorted(IMPURE)!r})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = set(ast.literal_eval(result.stdout.strip()))
    assert loaded - ENGINE_LOADS.get(package, frozenset()) == set()


# -- cycles ---------------------------------------------------------------------------------------


def test_no_import_cycle() -> None:
    graph = {module: ferrymq_imports(module) for module in MODULES}
    assert import_cycles(graph) == set(), "each set is a strongly connected component"


# -- each layer's public surface ------------------------------------------------------------------


def test_the_stomp_api_is_exported() -> None:
    exported = set(ferrymq.stomp.__all__)
    assert {"FrameParser", "ServerSession", "ClientSession", "encode", "encode_message"} <= exported
    assert all(hasattr(ferrymq.stomp, name) for name in exported)


def test_the_client_api_is_exported() -> None:
    for name in ferrymq.client.__all__:
        assert hasattr(ferrymq.client, name), name
    assert callable(ferrymq.client.connect)
    assert {"BrokerErrorFrame", "ConnectionClosed", "Message", "Subscription"} <= set(
        ferrymq.client.__all__
    )

"""stomp.js in a real browser: headless Chromium (Debian's chromium and chromium-driver, driven
by selenium) loads a local page that uses stomp.js's UMD bundle to connect over ``ws://``,
receive what a TCP client sent and send and receive a message of its own."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from ferrymq.config.cli import config_from_flags
from ferrymq.testing import BrokerThread, wait_until_blocking
from tests.websocket.conftest import STOMP_UMD

PAGE = Path(__file__).resolve().parent / "page.html"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def site(tmp_path: Path, stompjs: Path) -> Iterator[str]:
    """The test page and stomp.js, served by a tiny HTTP server on 127.0.0.1 (port 0)."""
    root = tmp_path / "site"
    root.mkdir()
    shutil.copy(PAGE, root / "index.html")
    shutil.copy(STOMP_UMD, root / "stomp.umd.js")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def chromium() -> Iterator[webdriver.Chrome]:
    for path in (CHROMIUM, CHROMEDRIVER):
        assert Path(path).exists(), f"{path} is missing: install chromium and chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def _send_over_tcp(port: int, destination: str, body: str) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00")
        frame = f"SEND\ndestination:{destination}\nreceipt:r\n\n{body}\x00"
        sock.sendall(frame.encode())
        answers = b""
        while answers.count(b"\x00") < 2:  # CONNECTED, then the RECEIPT
            chunk = sock.recv(4096)
            assert chunk, answers
            answers += chunk
        assert b"RECEIPT\n" in answers


def test_stompjs_in_headless_chromium_over_ws(
    tmp_path: Path, site: str, chromium: webdriver.Chrome
) -> None:
    # A broker without authentication serves only the pages allowedOrigins names (the site's).
    origin = site.rsplit("/", 1)[0]
    listen = ["stomp://127.0.0.1:0", f"ws://127.0.0.1:0?allowedOrigins={origin}"]
    config = config_from_flags("localhost", tmp_path / "data", listen, "off", False)
    with BrokerThread(config) as thread:
        assert thread.broker is not None
        tcp_port, ws_port = thread.broker.stomp_ports
        _send_over_tcp(tcp_port, "/queue/browser-in", "from tcp")
        chromium.get(f"{site}?ws=ws://127.0.0.1:{ws_port}/")
        result: dict[str, Any] = {}

        def reported() -> bool:
            result.update(chromium.execute_script("return window.ferrymqResult || {}"))
            return bool(result)

        wait_until_blocking(reported, 30, "the page's report")
    assert "error" not in result, result
    assert result["version"] == "1.2"
    assert result["subprotocol"] == "v12.stomp"
    assert sorted((m["destination"], m["body"]) for m in result["received"]) == [
        ("/queue/browser-in", "from tcp"),
        ("/queue/browser-loop", "hello from Chromium"),
    ]

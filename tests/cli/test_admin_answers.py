"""What the CLI says when the address given as --admin answers, but not as FerryMQ's admin
API would (issue 15 review): some other HTTP server, or none in time. One line, exit 1, never
a traceback; a write that got no answer says it may have happened in part."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

from ferrymq.cli.main import main


class _NotFerryMQ(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._page()

    def do_POST(self) -> None:
        self._page()

    def _page(self) -> None:
        body = b"<html>a proxy's welcome page</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def other_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFerryMQ)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers (a broker busy with a long move, as seen)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield f"127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.parametrize("command", [["stat"], ["purge", "q"], ["connections"]])
def test_another_http_server_is_named_as_not_the_admin_api(
    other_server: str, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    assert main([*command, "--admin", other_server]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"ferrymq {command[0]}: http://{other_server} answered, but it is not a FerryMQ admin "
        "API (check --admin)\n"
    )


def test_a_write_without_an_answer_may_have_happened(
    silent_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["move", "a", "b", "--admin", silent_server, "--timeout", "0.3"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"ferrymq move: no answer from the admin API at http://{silent_server} within 0.3 s; "
        "the broker may still be working on it"
    )
    assert "check with `ferrymq stat` before running it again" in line

"""``python -m ferrymq.store.benchmark``: its arguments are checked, never taken for a directory."""

from __future__ import annotations

import pytest

from ferrymq.store.benchmark import main


def test_help_is_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    assert "fsync" in capsys.readouterr().out


def test_a_missing_directory_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["/nonexistent/ferrymq"])
    assert exited.value.code == 2
    assert "/nonexistent/ferrymq is not a directory" in capsys.readouterr().err

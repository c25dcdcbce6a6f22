"""A server with the embedding leg on runs numpy's BLAS on one thread: the leg's exact cosines are
small dot products, which a second thread only makes wait (vectors/leg.py)."""

from __future__ import annotations

from pathlib import Path

from threadpoolctl import threadpool_info, threadpool_limits

from powercontext_runtime import open_application
from powercontext_server.app import create_app
from powercontext_server.settings import EmbeddingSettings, HttpSettings
from tests.conftest import settings_for


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_a_server_with_the_leg_on_runs_blas_on_one_thread(tmp_path: Path) -> None:
    with threadpool_limits(limits=2, user_api="blas"):  # as many as this machine would start
        app = open_application(settings_for(tmp_path))
        try:
            create_app(app, HttpSettings())
            assert _blas_threads() == {2}  # a server without the leg leaves the process as it was
            embedding = EmbeddingSettings(url="http://127.0.0.1:9", model="m", dimensions=4)
            create_app(app, HttpSettings(embedding=embedding))
            assert _blas_threads() == {1}
        finally:
            app.close()

"""With the embedding leg on, the process runs numpy's BLAS on one thread: the leg's cosine is a
memory-bound matrix-vector product, and a second thread only made it wait (application.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from powercontext_runtime import EmbeddingLeg, Settings, open_application


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_turning_the_leg_on_runs_blas_on_one_thread(tmp_path: Path) -> None:
    with threadpool_limits(limits=2, user_api="blas"):  # as many as this machine would start
        assert _blas_threads() == {2}
        app = open_application(Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}"))
        try:
            app.use_embeddings(
                EmbeddingLeg(lambda texts, _: np.ones((len(texts), 4), np.float32), "m", 4, 0.15)
            )
            assert _blas_threads() == {1}
        finally:
            app.close()

"""Topic Memory writes: a topic's next revision, created or revised directly, without a Candidate
(inside an open transaction; the Scope's row lock is taken first)."""

from __future__ import annotations

from ..errors import RevisionConflict
from ..models import TOPIC_FAMILY, ArtifactRef, Topic
from . import artifacts, scopes
from .conn import Conn
from .op import writes


@writes
def put_topic(
    conn: Conn,
    scope_id: str,
    artifact_id: str | None,
    title: str,
    summary: str,
    detail: str,
    expected_revision: int | None,
) -> Topic:
    """Create (`artifact_id` None or new) or revise a topic; commits its next revision."""
    key = scopes.require_key(conn, scope_id, lock=True)
    if artifact_id is None:
        artifact_id = artifacts.fresh_artifact_id(conn, key, TOPIC_FAMILY, "topic")
    head = artifacts.head_revision(conn, key, TOPIC_FAMILY, artifact_id)
    if expected_revision is not None and expected_revision != head:
        raise RevisionConflict("The expected revision of the topic is stale.")
    topic = Topic(ArtifactRef(TOPIC_FAMILY, artifact_id, head + 1), title, summary, detail)
    artifacts.commit_revision(
        conn, key, TOPIC_FAMILY, artifact_id, head + 1, artifacts.encode_payload(TOPIC_FAMILY, topic)
    )
    return topic

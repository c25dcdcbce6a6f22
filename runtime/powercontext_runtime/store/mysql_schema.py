"""Versioned OceanBase (MySQL mode) migrations, numbered like the SQLite ones.

Text that is compared or ordered uses the binary collation, so ids and terms sort and match by
code point exactly as on SQLite. Bodies are MEDIUMTEXT (TEXT stops at 64 KB).
OceanBase commits DDL implicitly: a migration's data step runs after its tables exist.
"""

from __future__ import annotations

from ..search import list_documents
from .memory_hygiene import fill_text_hashes
from .migrations import Migration
from .search_backfill import upgrade_index

_TABLE = "DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin"
# One node, one partition per table: auto-increment keys grow with insertion order, which search
# ties rely on (the newer document first).
_ORDERED = _TABLE

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        f"""
        CREATE TABLE scopes (
            scope_key BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
            scope_id VARCHAR(256) NOT NULL,
            title VARCHAR(512) NOT NULL,
            summary MEDIUMTEXT NOT NULL,
            version BIGINT NOT NULL,
            memory_revision BIGINT NOT NULL DEFAULT 0,
            entry_counter BIGINT NOT NULL DEFAULT 0,
            created_at VARCHAR(40) NOT NULL,
            updated_at VARCHAR(40) NOT NULL,
            UNIQUE KEY scopes_scope_id (scope_id)
        ) {_ORDERED};
        CREATE TABLE scope_references (
            scope_key BIGINT NOT NULL,
            position INT NOT NULL,
            referenced_key BIGINT NOT NULL,
            PRIMARY KEY (scope_key, position)
        ) {_TABLE};
        CREATE TABLE memory_revisions (
            scope_key BIGINT NOT NULL,
            revision BIGINT NOT NULL,
            operation VARCHAR(16) NOT NULL,
            entry_id VARCHAR(128) NOT NULL,
            created_at VARCHAR(40) NOT NULL,
            PRIMARY KEY (scope_key, revision)
        ) {_TABLE};
        CREATE TABLE memory_entries (
            scope_key BIGINT NOT NULL,
            entry_id VARCHAR(128) NOT NULL,
            entry_number BIGINT NOT NULL,
            kind VARCHAR(64) NOT NULL,
            head_version BIGINT NOT NULL,
            retired_revision BIGINT,
            PRIMARY KEY (scope_key, entry_id),
            UNIQUE KEY memory_entries_number (scope_key, entry_number)
        ) {_TABLE};
        CREATE TABLE memory_entry_versions (
            version_key BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
            scope_key BIGINT NOT NULL,
            entry_id VARCHAR(128) NOT NULL,
            version_number BIGINT NOT NULL,
            entry_version_id VARCHAR(160) NOT NULL,
            text MEDIUMTEXT NOT NULL,
            added_revision BIGINT NOT NULL,
            removed_revision BIGINT,
            UNIQUE KEY memory_versions_number (scope_key, entry_id, version_number),
            UNIQUE KEY memory_versions_id (scope_key, entry_version_id)
        ) {_ORDERED}
        """,
    ),
    Migration(
        2,
        f"""
        CREATE TABLE scope_counters (
            scope_key BIGINT NOT NULL,
            name VARCHAR(32) NOT NULL,
            value BIGINT NOT NULL,
            PRIMARY KEY (scope_key, name)
        ) {_TABLE};
        CREATE TABLE artifact_revisions (
            revision_key BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            artifact_id VARCHAR(128) NOT NULL,
            revision BIGINT NOT NULL,
            payload MEDIUMTEXT NOT NULL,
            created_at VARCHAR(40) NOT NULL,
            UNIQUE KEY artifact_revisions_identity (scope_key, family, artifact_id, revision)
        ) {_ORDERED};
        CREATE TABLE artifact_heads (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            artifact_id VARCHAR(128) NOT NULL,
            revision BIGINT NOT NULL,
            revision_key BIGINT NOT NULL,
            PRIMARY KEY (scope_key, family, artifact_id)
        ) {_TABLE};
        CREATE TABLE candidates (
            scope_key BIGINT NOT NULL,
            candidate_id VARCHAR(128) NOT NULL,
            candidate_number BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            target_artifact_id VARCHAR(128),
            base_revision BIGINT NOT NULL,
            payload MEDIUMTEXT NOT NULL,
            state VARCHAR(16) NOT NULL,
            version BIGINT NOT NULL,
            committed_artifact_id VARCHAR(128),
            committed_revision BIGINT,
            created_at VARCHAR(40) NOT NULL,
            decided_at VARCHAR(40),
            PRIMARY KEY (scope_key, candidate_id),
            UNIQUE KEY candidates_number (scope_key, candidate_number)
        ) {_TABLE}
        """,
    ),
    Migration(
        3,
        f"""
        CREATE TABLE search_docs (
            family VARCHAR(32) NOT NULL,
            doc_key BIGINT NOT NULL,
            scope_key BIGINT NOT NULL,
            length BIGINT NOT NULL,
            PRIMARY KEY (family, doc_key)
        ) {_TABLE};
        CREATE TABLE search_postings (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            term VARCHAR(256) NOT NULL,
            doc_key BIGINT NOT NULL,
            tf BIGINT NOT NULL,
            PRIMARY KEY (scope_key, family, term, doc_key)
        ) {_TABLE};
        CREATE TABLE search_terms (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            term VARCHAR(256) NOT NULL,
            df BIGINT NOT NULL,
            PRIMARY KEY (scope_key, family, term)
        ) {_TABLE};
        CREATE TABLE search_stats (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            documents BIGINT NOT NULL,
            total_length BIGINT NOT NULL,
            PRIMARY KEY (scope_key, family)
        ) {_TABLE}
        """,
    ),
    Migration(
        4,
        f"""
        DROP TABLE search_terms;
        ALTER TABLE search_stats ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
        CREATE INDEX search_docs_scope ON search_docs (scope_key, family);
        CREATE TABLE search_log (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            generation BIGINT NOT NULL,
            doc_key BIGINT NOT NULL,
            length BIGINT NOT NULL,
            terms LONGTEXT,
            PRIMARY KEY (scope_key, family, generation)
        ) {_TABLE}
        """,
        # Its data step (index every head) is 8's now: today's code writes 8's tables.
    ),
    Migration(
        5,
        """
        -- Terms are normalised (NFKC, case folding) and stemmed since this version (search/_tokens.py):
        -- every head is indexed again.
        """,
        # Its data step (index every head again) is 8's now, for the same reason.
    ),
    Migration(
        6,
        f"""
        CREATE TABLE memory_erasures (
            scope_key BIGINT NOT NULL,
            entry_id VARCHAR(128) NOT NULL,
            erased_revision BIGINT NOT NULL,
            PRIMARY KEY (scope_key, entry_id)
        ) {_TABLE}
        """,
    ),
    Migration(
        7,
        f"""
        -- Postings a row per term and index write, packed (see search/_postings.py): a batch of entries
        -- writes a row per distinct term instead of one per posting; a row of one posting holds only
        -- its tf. Every head is indexed again, by 8's data step (today's code writes 8's log).
        DROP TABLE search_postings;
        CREATE TABLE search_segments (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            term VARCHAR(256) NOT NULL,
            segment BIGINT NOT NULL,
            postings LONGBLOB NOT NULL,
            PRIMARY KEY (scope_key, family, term, segment)
        ) {_TABLE};
        ALTER TABLE search_docs ADD COLUMN segment BIGINT NOT NULL DEFAULT 0
        """,
    ),
    Migration(
        8,
        f"""
        -- A log row per index write, its documents and their postings packed (see search/_log.py),
        -- instead of a row per document with its terms as JSON.
        DROP TABLE search_log;
        CREATE TABLE search_log (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            generation BIGINT NOT NULL,
            doc_key BIGINT NOT NULL,
            added LONGBLOB,
            PRIMARY KEY (scope_key, family, generation)
        ) {_TABLE};
        -- Writes of many documents leave their postings in their log row until enough have gathered,
        -- then go into one run together (see search/_writes.py); these are the ones waiting.
        CREATE TABLE search_pending (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            generation BIGINT NOT NULL,
            documents BIGINT NOT NULL,
            PRIMARY KEY (scope_key, family, generation)
        ) {_TABLE};
        -- Postings of merged writes, a row per term and run like search_segments, but clustered by
        -- run: a merge writes one stretch of the table instead of a row beside every term's others.
        CREATE TABLE search_runs (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            segment BIGINT NOT NULL,
            term VARCHAR(256) NOT NULL,
            postings LONGBLOB NOT NULL,
            PRIMARY KEY (scope_key, family, segment, term)
        ) {_TABLE};
        -- The runs of each (Scope, family), and the documents each held when written (its size class).
        CREATE TABLE search_run_sizes (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            segment BIGINT NOT NULL,
            documents BIGINT NOT NULL,
            PRIMARY KEY (scope_key, family, segment)
        ) {_TABLE}
        """,
        after=upgrade_index,
    ),
    Migration(
        9,
        f"""
        -- Merges run in the background, a range of terms per transaction (see search/_merge.py): the
        -- merge under way in each (Scope, family), the last term it has merged, and its sources
        -- (runs, or deferred writes by their log generation, each named by its segment).
        CREATE TABLE search_merges (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            target BIGINT NOT NULL,
            merged_through VARCHAR(256) NOT NULL,
            PRIMARY KEY (scope_key, family)
        ) {_TABLE};
        CREATE TABLE search_merge_sources (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            segment BIGINT NOT NULL,
            generation BIGINT NOT NULL,
            PRIMARY KEY (scope_key, family, segment)
        ) {_TABLE}
        """,
    ),
    Migration(
        10,
        """
        -- Memory hygiene (see store/memory_hygiene.py): a hash of each active entry's head text as
        -- search compares it, for the duplicate check; and when a version stops being recalled.
        ALTER TABLE memory_entries ADD COLUMN text_hash BIGINT;
        CREATE INDEX memory_entries_text_hash ON memory_entries (scope_key, text_hash);
        ALTER TABLE memory_entry_versions ADD COLUMN expires_at VARCHAR(40);
        CREATE INDEX memory_versions_expiry ON memory_entry_versions (scope_key, removed_revision, expires_at)
        """,
        after=fill_text_hashes,
    ),
    Migration(
        11,
        f"""
        -- The embedding leg's vectors: as on SQLite (sqlite_schema.py, migration 11).
        CREATE TABLE memory_vectors (
            vector_key BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
            version_key BIGINT NOT NULL,
            scope_key BIGINT NOT NULL,
            model VARCHAR(256) NOT NULL,
            dims BIGINT NOT NULL,
            vector LONGBLOB NOT NULL,
            UNIQUE KEY memory_vectors_version (version_key, model, dims),
            KEY memory_vectors_scope (scope_key, model, dims, vector_key)
        ) {_ORDERED};
        CREATE TABLE memory_vector_removals (
            scope_key BIGINT NOT NULL PRIMARY KEY,
            removals BIGINT NOT NULL
        ) {_TABLE}
        """,
    ),
    Migration(
        12,
        f"""
        -- Vectors of Experience and Topic Memory: as on SQLite (sqlite_schema.py, migration 12).
        CREATE TABLE artifact_vectors (
            vector_key BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
            revision_key BIGINT NOT NULL,
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            model VARCHAR(256) NOT NULL,
            dims BIGINT NOT NULL,
            vector LONGBLOB NOT NULL,
            UNIQUE KEY artifact_vectors_revision (revision_key, model, dims),
            KEY artifact_vectors_scope (scope_key, family, model, dims, vector_key)
        ) {_ORDERED};
        CREATE TABLE artifact_vector_removals (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            removals BIGINT NOT NULL,
            PRIMARY KEY (scope_key, family)
        ) {_TABLE}
        """,
    ),
    Migration(
        13,
        f"""
        -- Documents packed per stretch of keys: as on SQLite (sqlite_schema.py, migration 13).
        CREATE TABLE search_doc_lists (
            scope_key BIGINT NOT NULL,
            family VARCHAR(32) NOT NULL,
            base BIGINT NOT NULL,
            generation BIGINT NOT NULL,
            docs LONGBLOB NOT NULL,
            PRIMARY KEY (scope_key, family, base)
        ) {_TABLE}
        """,
        after=list_documents,
    ),
)

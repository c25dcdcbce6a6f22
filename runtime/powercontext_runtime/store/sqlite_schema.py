"""Versioned SQLite migrations (the OceanBase ones in `mysql_schema.py` carry the same numbers)."""

from __future__ import annotations

from ..search import list_documents
from .memory_hygiene import fill_text_hashes
from .migrations import Migration
from .search_backfill import upgrade_index

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        """
        CREATE TABLE scopes (
            scope_key INTEGER PRIMARY KEY,
            scope_id TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            summary TEXT NOT NULL,
            version INTEGER NOT NULL,
            memory_revision INTEGER NOT NULL DEFAULT 0,
            entry_counter INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE scope_references (
            scope_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            position INTEGER NOT NULL,
            referenced_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            PRIMARY KEY (scope_key, position)
        );
        -- One row per committed Memory revision: the immutable change log.
        CREATE TABLE memory_revisions (
            scope_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            revision INTEGER NOT NULL,
            operation TEXT NOT NULL,
            entry_id TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (scope_key, revision)
        );
        CREATE TABLE memory_entries (
            scope_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            entry_id TEXT NOT NULL,
            entry_number INTEGER NOT NULL,
            kind TEXT NOT NULL,
            head_version INTEGER NOT NULL,
            retired_revision INTEGER,
            PRIMARY KEY (scope_key, entry_id),
            UNIQUE (scope_key, entry_number)
        );
        -- A version's text never changes; it is live in revisions [added_revision, removed_revision).
        CREATE TABLE memory_entry_versions (
            version_key INTEGER PRIMARY KEY,
            scope_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            entry_id TEXT NOT NULL,
            version_number INTEGER NOT NULL,
            entry_version_id TEXT NOT NULL,
            text TEXT NOT NULL,
            added_revision INTEGER NOT NULL,
            removed_revision INTEGER,
            UNIQUE (scope_key, entry_id, version_number),
            UNIQUE (scope_key, entry_version_id)
        );
        -- Head versions only; rowid = version_key. scope_tag confines a MATCH to one Scope.
        CREATE VIRTUAL TABLE memory_fts USING fts5 (
            scope_tag, body, tokenize = "unicode61 remove_diacritics 0 tokenchars '_'"
        );
        """,
    ),
    Migration(
        2,
        """
        -- Per-Scope counters that name new things: experience-N, topic-N, candidate-N.
        CREATE TABLE scope_counters (
            scope_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            name TEXT NOT NULL,
            value INTEGER NOT NULL,
            PRIMARY KEY (scope_key, name)
        );
        -- Committed revisions of Experience, Profile and Topic Memory; rows are never updated.
        CREATE TABLE artifact_revisions (
            revision_key INTEGER PRIMARY KEY,
            scope_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            family TEXT NOT NULL,
            artifact_id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            payload TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (scope_key, family, artifact_id, revision)
        );
        CREATE TABLE artifact_heads (
            scope_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            family TEXT NOT NULL,
            artifact_id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            revision_key INTEGER NOT NULL REFERENCES artifact_revisions (revision_key),
            PRIMARY KEY (scope_key, family, artifact_id)
        );
        CREATE TABLE candidates (
            scope_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            candidate_id TEXT NOT NULL,
            candidate_number INTEGER NOT NULL,
            family TEXT NOT NULL,
            target_artifact_id TEXT,
            base_revision INTEGER NOT NULL,
            payload TEXT NOT NULL,
            state TEXT NOT NULL,
            version INTEGER NOT NULL,
            committed_artifact_id TEXT,
            committed_revision INTEGER,
            created_at TEXT NOT NULL,
            decided_at TEXT,
            PRIMARY KEY (scope_key, candidate_id),
            UNIQUE (scope_key, candidate_number)
        );
        -- Head revisions only; rowid = revision_key.
        CREATE VIRTUAL TABLE experience_fts USING fts5 (
            scope_tag, body, tokenize = "unicode61 remove_diacritics 0 tokenchars '_'"
        );
        CREATE VIRTUAL TABLE topic_fts USING fts5 (
            scope_tag, body, tokenize = "unicode61 remove_diacritics 0 tokenchars '_'"
        );
        """,
    ),
    Migration(
        3,
        """
        -- One ranked index for every backend (see search/_bm25.py) replaces the FTS5 tables, whose
        -- BM25 no other database reproduces.
        DROP TABLE memory_fts;
        DROP TABLE experience_fts;
        DROP TABLE topic_fts;
        CREATE TABLE search_docs (
            family TEXT NOT NULL,
            doc_key INTEGER NOT NULL,
            scope_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            length INTEGER NOT NULL,
            PRIMARY KEY (family, doc_key)
        );
        CREATE TABLE search_postings (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            term TEXT NOT NULL,
            doc_key INTEGER NOT NULL,
            tf INTEGER NOT NULL,
            PRIMARY KEY (scope_key, family, term, doc_key)
        ) WITHOUT ROWID;
        CREATE TABLE search_terms (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            term TEXT NOT NULL,
            df INTEGER NOT NULL,
            PRIMARY KEY (scope_key, family, term)
        ) WITHOUT ROWID;
        CREATE TABLE search_stats (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            documents INTEGER NOT NULL,
            total_length INTEGER NOT NULL,
            PRIMARY KEY (scope_key, family)
        );
        """,
    ),
    Migration(
        4,
        """
        -- A generation per (Scope, family) and a log of index changes let in-memory mirrors of the
        -- index catch up by replay (see search/_mirror.py); the backfill moves here from 3. Mirrors
        -- count document frequencies themselves, so writes no longer update a row per term.
        DROP TABLE search_terms;
        ALTER TABLE search_stats ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX search_docs_scope ON search_docs (scope_key, family);
        CREATE TABLE search_log (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            generation INTEGER NOT NULL,
            doc_key INTEGER NOT NULL,
            length INTEGER NOT NULL,
            terms TEXT,
            PRIMARY KEY (scope_key, family, generation)
        ) WITHOUT ROWID;
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
        """
        -- Entries erased for good: their texts are gone, their ids answer 410 from then on.
        CREATE TABLE memory_erasures (
            scope_key INTEGER NOT NULL REFERENCES scopes (scope_key),
            entry_id TEXT NOT NULL,
            erased_revision INTEGER NOT NULL,
            PRIMARY KEY (scope_key, entry_id)
        )
        """,
    ),
    Migration(
        7,
        """
        -- Postings a row per term and index write, packed (see search/_postings.py): a batch of entries
        -- writes a row per distinct term instead of one per posting; a row of one posting holds only
        -- its tf. Every head is indexed again, by 8's data step (today's code writes 8's log).
        DROP TABLE search_postings;
        CREATE TABLE search_segments (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            term TEXT NOT NULL,
            segment INTEGER NOT NULL,
            postings BLOB NOT NULL,
            PRIMARY KEY (scope_key, family, term, segment)
        ) WITHOUT ROWID;
        ALTER TABLE search_docs ADD COLUMN segment INTEGER NOT NULL DEFAULT 0
        """,
    ),
    Migration(
        8,
        """
        -- A log row per index write, its documents and their postings packed (see search/_log.py),
        -- instead of a row per document with its terms as JSON.
        DROP TABLE search_log;
        CREATE TABLE search_log (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            generation INTEGER NOT NULL,
            doc_key INTEGER NOT NULL,
            added BLOB,
            PRIMARY KEY (scope_key, family, generation)
        ) WITHOUT ROWID;
        -- Writes of many documents leave their postings in their log row until enough have gathered,
        -- then go into one run together (see search/_writes.py); these are the ones waiting.
        CREATE TABLE search_pending (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            generation INTEGER NOT NULL,
            documents INTEGER NOT NULL,
            PRIMARY KEY (scope_key, family, generation)
        ) WITHOUT ROWID;
        -- Postings of merged writes, a row per term and run like search_segments, but clustered by
        -- run: a merge writes one stretch of the table instead of a row beside every term's others.
        CREATE TABLE search_runs (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            segment INTEGER NOT NULL,
            term TEXT NOT NULL,
            postings BLOB NOT NULL,
            PRIMARY KEY (scope_key, family, segment, term)
        ) WITHOUT ROWID;
        -- The runs of each (Scope, family), and the documents each held when written (its size class).
        CREATE TABLE search_run_sizes (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            segment INTEGER NOT NULL,
            documents INTEGER NOT NULL,
            PRIMARY KEY (scope_key, family, segment)
        ) WITHOUT ROWID
        """,
        after=upgrade_index,
    ),
    Migration(
        9,
        """
        -- Merges run in the background, a range of terms per transaction (see search/_merge.py): the
        -- merge under way in each (Scope, family), the last term it has merged, and its sources
        -- (runs, or deferred writes by their log generation, each named by its segment).
        CREATE TABLE search_merges (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            target INTEGER NOT NULL,
            merged_through TEXT NOT NULL,
            PRIMARY KEY (scope_key, family)
        ) WITHOUT ROWID;
        CREATE TABLE search_merge_sources (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            segment INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            PRIMARY KEY (scope_key, family, segment)
        ) WITHOUT ROWID
        """,
    ),
    Migration(
        10,
        """
        -- Memory hygiene (see store/memory_hygiene.py): a hash of each active entry's head text as
        -- search compares it, for the duplicate check; and when a version stops being recalled.
        ALTER TABLE memory_entries ADD COLUMN text_hash INTEGER;
        CREATE INDEX memory_entries_text_hash ON memory_entries (scope_key, text_hash);
        ALTER TABLE memory_entry_versions ADD COLUMN expires_at TEXT;
        -- Partial: versions that never expire (most) cost no index entry.
        CREATE INDEX memory_versions_expiry ON memory_entry_versions (scope_key, removed_revision, expires_at)
            WHERE expires_at IS NOT NULL
        """,
        after=fill_text_hashes,
    ),
    Migration(
        11,
        """
        -- The embedding leg's vectors (runtime/vectors): one per head entry version and model, filled
        -- in by the background embedder; a float32 little-endian blob of `dims` values. AUTOINCREMENT:
        -- keys never come back, so a Scope's (count, largest key) names its set of vectors.
        CREATE TABLE memory_vectors (
            vector_key INTEGER PRIMARY KEY AUTOINCREMENT,
            version_key INTEGER NOT NULL,
            scope_key INTEGER NOT NULL,
            model TEXT NOT NULL,
            dims INTEGER NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (version_key, model, dims)
        );
        CREATE INDEX memory_vectors_scope ON memory_vectors (scope_key, model, dims, vector_key);
        -- How many times each Scope's vectors lost rows: with the largest key, the stamp of its set.
        CREATE TABLE memory_vector_removals (
            scope_key INTEGER PRIMARY KEY,
            removals INTEGER NOT NULL
        )
        """,
    ),
    Migration(
        12,
        """
        -- The embedding leg's vectors of Experience and Topic Memory: one per head revision and model,
        -- as memory_vectors holds Memory's; each (Scope, family) is a set of its own.
        CREATE TABLE artifact_vectors (
            vector_key INTEGER PRIMARY KEY AUTOINCREMENT,
            revision_key INTEGER NOT NULL,
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            model TEXT NOT NULL,
            dims INTEGER NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (revision_key, model, dims)
        );
        CREATE INDEX artifact_vectors_scope ON artifact_vectors (scope_key, family, model, dims, vector_key);
        CREATE TABLE artifact_vector_removals (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            removals INTEGER NOT NULL,
            PRIMARY KEY (scope_key, family)
        )
        """,
    ),
    Migration(
        13,
        """
        -- A family's documents (key, length) packed into a row per stretch of keys, as of one
        -- generation (search/_doclists.py): a fresh mirror reads a few rows, not one per document.
        CREATE TABLE search_doc_lists (
            scope_key INTEGER NOT NULL,
            family TEXT NOT NULL,
            base INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            docs BLOB NOT NULL,
            PRIMARY KEY (scope_key, family, base)
        )
        """,
        after=list_documents,
    ),
)

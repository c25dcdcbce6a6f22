"""RFC: the Runtime "must also enforce family-specific limits … rather than relying only on
generated models" — a request built without validation still meets each family's bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext_api.models import Assembly, ExperienceSection, FamilySection, PrepareContextRequest
from powercontext_runtime import InvalidRequest, Settings, open_application


@pytest.mark.parametrize(
    "section",
    [
        FamilySection.model_construct(family="memory", limit=12),
        FamilySection.model_construct(family="topic-memory", limit=0),
        ExperienceSection.model_construct(family="experience", limit=3),
        FamilySection.model_construct(family="profile", limit="8"),  # the contract's limits are integers
        FamilySection.model_construct(family="profile", limit=True),
    ],
)
def test_a_section_limit_out_of_its_familys_bounds_is_refused_without_parsing(
    tmp_path: Path, section: FamilySection | ExperienceSection
) -> None:
    application = open_application(Settings(database_url=f"sqlite:///{tmp_path / 'limits.sqlite3'}"))
    try:
        request = PrepareContextRequest.model_construct(
            scope_id="project:x",
            query="q",
            max_bytes=8000,
            assembly=Assembly.model_construct(sections=[section]),
        )
        with pytest.raises(InvalidRequest) as refused:
            application.prepare_context(request)
        (error,) = refused.value.errors
        assert (error.type, error.loc) == ("family_limit", ("assembly", "sections", 0, "limit"))
    finally:
        application.close()

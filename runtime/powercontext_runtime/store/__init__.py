"""Storage backends behind one interface (`Store`)."""

from .base import Store

__all__ = ["Store"]

"""PowerContext server: the HTTP edge over the Runtime (`app`), and the `powercontext` commands
that need the server (`cli`). What tools outside it (bench) may use is below."""

from .allocator import keep_freed_memory
from .metrics import Metrics

__all__ = ["Metrics", "keep_freed_memory"]

"""Tools for working on PowerContext (code generation, a local seekdb); not shipped in any wheel."""

"""Which names lake_core accepts for databases, tables, tags, branches, consumers and file prefixes.

Every such name becomes (part of) one file or directory name, so a name must be exactly one path
component: Paimon's own rules (``TagManager``: a tag name is not blank; ``BranchManager.validateBranch``:
a branch is not blank, not ``main``, not all digits; ``Identifier``: ``$`` separates a table from its
system table or branch; ``Catalog.SYSTEM_DATABASE_NAME``: ``sys`` is reserved) plus the rules that keep
a name from leaving its directory: no ``/`` or ``\\``, not ``.`` or ``..``, no control characters (NUL
included), no leading or trailing whitespace, and at most 255 bytes of UTF-8 for the resulting file
name (``NAME_MAX`` of common file systems). The path builder (:mod:`lake_core.paths`) checks every
component again, so a name that slipped past these rules still cannot leave the table.
"""

from __future__ import annotations

from lake_core.errors import InvalidNameError

MAX_COMPONENT_BYTES = 255
SYSTEM_DATABASE = "sys"
MAIN_BRANCH = "main"
DB_SUFFIX = ".db"

_SEPARATORS = ("/", "\\")


def _check_component(
    kind: str,
    value: object,
    *,
    file_name_prefix: str = "",
    file_name_suffix: str = "",
    forbidden: str = "",
    forbidden_why: str = "",
) -> str:
    """The rules every name shares; returns the name."""
    if not isinstance(value, str):
        raise InvalidNameError(kind, value, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidNameError(kind, value, "must not be empty or blank")
    if value != value.strip():
        raise InvalidNameError(kind, value, "must not start or end with whitespace")
    if value in (".", ".."):
        raise InvalidNameError(kind, value, "'.' and '..' name directories, not objects")
    for chars, why in ((_SEPARATORS, "a name is one path component"), (forbidden, forbidden_why)):
        bad = sorted({c for c in value if c in chars})
        if bad:
            raise InvalidNameError(kind, value, f"must not contain {' or '.join(repr(c) for c in bad)} ({why})")
    ctrl = sorted({c for c in value if ord(c) < 0x20 or ord(c) == 0x7F})
    if ctrl:
        raise InvalidNameError(
            kind, value, "must not contain control characters (" + ", ".join(f"U+{ord(c):04X}" for c in ctrl) + ")"
        )
    size = len((file_name_prefix + value + file_name_suffix).encode("utf-8"))
    if size > MAX_COMPONENT_BYTES:
        limit = MAX_COMPONENT_BYTES - len((file_name_prefix + file_name_suffix).encode("utf-8"))
        raise InvalidNameError(
            kind, value, f"is {len(value.encode('utf-8'))} bytes of UTF-8; at most {limit} fit in one file name"
        )
    return value


def validate_database_name(name: object) -> str:
    return _check_component(
        "database name",
        name,
        file_name_suffix=DB_SUFFIX,
        forbidden=".",
        forbidden_why="'.' separates database and table in 'database.table'",
    )


def validate_table_name(name: object) -> str:
    return _check_component(
        "table name",
        name,
        forbidden=".$",
        forbidden_why="'.' separates database and table; '$' starts a system table or branch",
    )


def validate_tag_name(name: object) -> str:
    return _check_component("tag name", name, file_name_prefix="tag-")


def validate_branch_name(name: object) -> str:
    name = _check_component(
        "branch name",
        name,
        file_name_prefix="branch-",
        forbidden="$",
        forbidden_why="'$' separates a table from its branch",
    )
    if name == MAIN_BRANCH:
        raise InvalidNameError("branch name", name, f"'{MAIN_BRANCH}' is the default branch")
    if name.isdigit():
        raise InvalidNameError("branch name", name, "must not be all digits (it would read as a snapshot id)")
    return name


def validate_consumer_id(consumer_id: object) -> str:
    return _check_component("consumer id", consumer_id, file_name_prefix="consumer-")


def validate_file_prefix(option: str, value: object) -> str:
    """``data-file.prefix`` / ``changelog-file.prefix``: the start of a file name, so the same rules,
    except that it may be empty, and it may not start with '.' (hidden files are temp files)."""
    kind = f"option '{option}'"
    if value == "":
        return value
    if isinstance(value, str) and value.startswith("."):
        raise InvalidNameError(
            kind, value, "must not start with '.' (names starting with '.' are temporary files, which cleanup deletes)"
        )
    # room for '<uuid>-<counter>.<extension>' after the prefix
    return _check_component(kind, value, file_name_suffix="x" * 64)


def check_not_system_database(name: str) -> None:
    if name == SYSTEM_DATABASE:
        raise InvalidNameError(
            "database name", name, f"'{SYSTEM_DATABASE}' is Paimon's system database and cannot be created or dropped"
        )


def split_identifier(identifier: object) -> tuple[str, str]:
    """``'database.table'`` → (database, table), both validated."""
    if not isinstance(identifier, str) or identifier.count(".") != 1:
        raise InvalidNameError("table identifier", identifier, "must be 'database.table' (exactly one '.')")
    db, table = identifier.split(".")
    return validate_database_name(db), validate_table_name(table)

"""The system columns of primary-key data files (Java ``SpecialFields``) and their field ids.

A key-value data file stores ``_KEY_<k>`` copies of the primary key, then ``_SEQUENCE_NUMBER`` and
``_VALUE_KIND``, then the value columns.
"""

KEY_FIELD_PREFIX = "_KEY_"
KEY_FIELD_ID_START = 2147483647 // 2  # Integer.MAX_VALUE / 2 = 1073741823
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
SEQUENCE_NUMBER_ID = 2147483647 - 1
VALUE_KIND = "_VALUE_KIND"
VALUE_KIND_ID = 2147483647 - 2
#: Names a user's schema may not use.
RESERVED_NAMES = frozenset({SEQUENCE_NUMBER, VALUE_KIND})

# Short names for the merge code, which says them on every line.
SEQ = SEQUENCE_NUMBER
KIND = VALUE_KIND

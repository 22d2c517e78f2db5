"""``listagg``: joins the non-blank strings of a group with ``fields.<f>.list-agg-delimiter``
(``fields.<f>.distinct`` drops repeated tokens), with Java's notion of a blank string."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.merge.aggregate.base import ADD, AggFunction, accepts_string
from lake_core.merge.aggregate.segments import seg_reduce
from lake_core.merge.aggregate.values import validity

# Java Character.isWhitespace (StringUtils.isBlank): space separators except no-break ones,
# plus \t \n \x0b \f \r and \x1c-\x1f.
_BLANK_RE = "^[\t\n\x0b\f\r\x1c-\x1f \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]*$"
_BLANK_PY = re.compile(_BLANK_RE)


def _is_blank(s: str | None) -> bool:
    return s is None or _BLANK_PY.match(s) is not None


def _split_whole(s: str, sep: str) -> list[str]:
    """commons-lang ``splitByWholeSeparatorPreserveAllTokens`` (non-empty separator)."""
    if s == "":
        return []
    return s.split(sep) if sep else s.split()


class ListaggAgg(AggFunction):
    name = "listagg"
    accepts = staticmethod(accepts_string)
    accepted_types = "STRING (VARCHAR)"

    def __init__(self, column, dtype, options=None):
        super().__init__(column, dtype, options)
        self.delimiter = self.option("list-agg-delimiter", ",")
        self.distinct = (self.option("distinct", "false") or "false").strip().lower() == "true"
        self.may_change_single = True  # a lone blank string stays as it is in Java

    def agg(self, acc, v):
        if _is_blank(v):
            return acc
        if _is_blank(acc):
            return v
        if self.distinct:
            seen = set(_split_whole(acc, self.delimiter))
            parts = [acc]
            for tok in _split_whole(v, self.delimiter):
                if _is_blank(tok) or tok in seen:
                    continue
                seen.add(tok)
                parts.append(tok)
            return self.delimiter.join(parts) if len(parts) > 1 else acc
        return acc + self.delimiter + v

    def reduce_vec(self, values, seg, ops):
        if self.distinct:
            return self.reduce_seq(values, seg, ops)
        keep = (ops == ADD) & validity(values)
        if keep.any():
            blank = pc.fill_null(pc.match_substring_regex(values, _BLANK_RE), True)
            keep &= ~blank.to_numpy(zero_copy_only=False)
        counts = seg_reduce(np.add, keep.astype(np.int64), seg)
        kept = values.filter(pa.array(keep))
        if pa.types.is_large_string(values.type):
            lists = pa.LargeListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(counts)])), kept)
        else:
            lists = pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)), kept)
        joined = pc.binary_join(lists, self.delimiter)
        return pc.if_else(pa.array(counts > 0), joined, pa.scalar(None, values.type))

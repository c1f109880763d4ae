"""Checks of a release computed with pandas from the output alone, sharing nothing with the SQL macros."""
import pandas as pd


def class_sizes(release: pd.DataFrame, qis) -> pd.Series:
    """Sizes of the groups of identical (generalized) QI values; NULL counts as a value."""
    key = release[qis].apply(lambda r: "\x1f".join(map(str, r)), axis=1)
    return key.value_counts()


def ncp_percent(release: pd.DataFrame, source: pd.DataFrame, qis, numeric, id_col="rid") -> float:
    """NCP% as defined in the datasets README: widths from each class's original values, categories coded
    by first appearance in the source."""
    key = release[qis].apply(lambda r: "\x1f".join(map(str, r)), axis=1)
    merged = release[[id_col]].assign(_cls=key.values).merge(source, on=id_col, validate="one_to_one")
    total = 0.0
    for q in qis:
        if q in numeric:
            values = merged[q].astype(float)
            span = source[q].astype(float).max() - source[q].astype(float).min()
        else:
            order = {v: i for i, v in enumerate(pd.unique(source[q]))}
            values = merged[q].map(order).astype(float)
            span = len(order) - 1
        grouped = values.groupby(merged["_cls"])
        widths = (grouped.max() - grouped.min()) / (span or 1)
        total += (widths * grouped.size()).sum()
    return 100.0 * total / (len(qis) * len(source))

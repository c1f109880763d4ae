"""Checks of a release computed with pandas from the output alone, sharing nothing with the SQL macros."""
import pandas as pd


def row_keys(frame: pd.DataFrame, columns) -> pd.Series:
    """One text per row: the str() of its values in `columns`, joined by a separator no label holds (NULL
    is the text of its own value). Built column by column: a row-wise apply takes seconds on Adult."""
    columns = list(columns)
    key = frame[columns[0]].astype(object).map(str)
    for column in columns[1:]:
        key = key + "\x1f" + frame[column].astype(object).map(str)
    return key


def class_sizes(release: pd.DataFrame, qis) -> pd.Series:
    """Sizes of the groups of identical (generalized) QI values; NULL counts as a value."""
    return row_keys(release, qis).value_counts()


def ncp_percent(release: pd.DataFrame, source: pd.DataFrame, qis, numeric, id_col="rid") -> float:
    """NCP% as defined in the datasets README: widths from each class's original values, categories coded
    by first appearance in the source."""
    key = row_keys(release, qis)
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

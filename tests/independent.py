"""Checks of a release computed with pandas from the output alone, sharing nothing with the SQL macros."""
import math
from html.parser import HTMLParser

import numpy as np
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


def _rating_bounds(con, table, typed):
    """The release as numeric ranges: item, value and day (days since 1970) lo/hi per row."""
    if typed:
        sql = (f"SELECT record_id, item.lo AS i_lo, item.hi AS i_hi, value.lo AS v_lo, value.hi AS v_hi, "
               f"epoch(ts.lo) / 86400 AS d_lo, epoch(ts.hi) / 86400 AS d_hi FROM {table}")
    else:
        sql = (f"SELECT record_id, item AS i_lo, item AS i_hi, value AS v_lo, value AS v_hi, "
               f"epoch(ts) / 86400 AS d_lo, epoch(ts) / 86400 AS d_hi FROM {table}")
    return con.execute(sql).df()


def scoreboard_shares(con, table, aux, typed, rho0=1.5, d0=30.0):
    """(top1, top5, unique share) from Scoreboard-RH's formula scored over every record with numpy: the own
    record's place among all records, a tie among n counting as a uniform draw."""
    rel = _rating_bounds(con, table, typed)
    known = con.execute(f"SELECT target_id, item, value, epoch(ts) / 86400 AS day FROM {aux}").df()
    ids = np.sort(rel["record_id"].unique())
    position = np.searchsorted(ids, rel["record_id"].to_numpy())
    top1, top5 = [], []
    for target, rows in known.groupby("target_id"):
        scores = np.zeros(len(ids))
        for _, k in rows.iterrows():
            covers = ((rel["i_lo"] <= k["item"]) & (k["item"] <= rel["i_hi"])).to_numpy()
            if not covers.any():
                continue
            wt = 1 / math.log(max(covers.sum(), 2))
            gap_v = np.maximum.reduce([rel["v_lo"] - k["value"], k["value"] - rel["v_hi"], np.zeros(len(rel))])
            gap_d = np.maximum.reduce([rel["d_lo"] - k["day"], k["day"] - rel["d_hi"], np.zeros(len(rel))])
            sim = np.where(covers, np.exp(-gap_v / rho0) + np.exp(-gap_d / d0), -np.inf)
            best = np.full(len(ids), -np.inf)
            np.maximum.at(best, position, sim)
            scores += wt * np.where(np.isfinite(best), best, 0)
        own = scores[np.searchsorted(ids, target)]
        better = int((scores > own + 1e-7).sum())
        tied = int((np.abs(scores - own) <= 1e-7).sum())
        top1.append(1 / tied if better == 0 else 0.0)
        top5.append(min(max((5 - better) / tied, 0.0), 1.0))
    released = rel.assign(row=rel.drop(columns="record_id").astype(str).agg("|".join, axis=1))
    sets = released.groupby("record_id")["row"].agg(lambda r: tuple(sorted(r)))
    unique = (sets.map(sets.value_counts()) == 1).mean()
    return float(np.mean(top1)), float(np.mean(top5)), float(unique)


def expected_released(kept: np.ndarray, m: int, eps_each: float, delta: float) -> float:
    """Groups a Laplace partition selection is expected to release, each group's people kept being `kept`:
    P(kept + Laplace(m / eps_each) >= 1 + m / eps_each * ln(m / (2 delta))), summed (dp_aggregate's rule for choosing max_groups_contributed, in numpy)."""
    scale = m / eps_each
    gap = kept - (1 + scale * math.log(m / (2 * delta)))
    return float(np.where(gap >= 0, 1 - 0.5 * np.exp(-np.abs(gap) / scale), 0.5 * np.exp(-np.abs(gap) / scale)).sum())



def catalog_digest(con, value) -> str:
    """The catalog's record of a person (anon_person_digest), recomputed in Python from the session's catalog
    key: SHA-256(key || SHA-256(key || value)), its first 32 hex digits."""
    import hashlib
    key = con.execute("SELECT getvariable('duckdb_anon_catalog_key')").fetchall()[0][0]
    inner = hashlib.sha256((key + str(value)).encode()).hexdigest()
    return hashlib.sha256((key + inner).encode()).hexdigest()[:32]


class HtmlPage(HTMLParser):
    """An HTML page or fragment as the standard library's parser reads it: each tag with the path of its
    parents and its attributes, and the visible text (unescaped); nesting is checked as it is read, and
    every tag must be closed."""
    VOID = {"img", "meta", "br"}  # elements without an end tag

    def __init__(self, text: str):
        super().__init__()
        self.open, self.tags, self.text = [], [], []
        self.feed(text)
        self.close()
        assert self.open == [], f"unclosed tags: {self.open}"

    def handle_starttag(self, tag, attrs):
        self.tags.append(("/".join([*self.open, tag]), dict(attrs)))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        self.open.pop()

    def handle_data(self, data):
        self.text.append(data)

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.tags]

    @property
    def images(self) -> list[str]:
        return [attrs["src"] for path, attrs in self.tags if path.rsplit("/", 1)[-1] == "img"]

    @property
    def links(self) -> list[str]:
        return [value for _, attrs in self.tags for name, value in attrs.items() if name in ("src", "href")]

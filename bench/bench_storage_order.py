"""The storage-order attack against a multi-table release, with the order the publishing core writes and with
the source's order (what a release stored in its source's order gave away).

The adversary holds the release and the sorted list of the raw ids of the people in it (a public roster, or
the ids of any other table), but not the pseudonym key. Pairing the i-th distinct pseudonym in storage order with the i-th raw id
in id order recovers everyone when the release keeps its source's order (sorted by id). Run:

    python bench/bench_storage_order.py [--people 2000]

It prints, per table of the release: people, ids recovered by pairing, |Spearman rho| between storage position
and raw id, and the same two figures for the rows re-sorted in source order (the reference).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import duckdb_anon


def spearman(x, y) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def attack(pseudonyms_in_order: list[str], truth: dict[str, int], ids_sorted: list[int]) -> tuple[int, float]:
    """(ids recovered by pairing the i-th distinct pseudonym with the i-th id, |rho| of position vs id)."""
    distinct = list(dict.fromkeys(pseudonyms_in_order))
    recovered = sum(1 for i, p in enumerate(distinct) if i < len(ids_sorted) and truth[p] == ids_sorted[i])
    positions = np.arange(len(pseudonyms_in_order))
    return recovered, abs(spearman(positions, np.array([truth[p] for p in pseudonyms_in_order])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=2000)
    args = parser.parse_args()
    con = duckdb_anon.connect()
    # long-tailed people and items (synthetic_ratings), a person table with QIs unrelated to the id
    con.execute("CREATE TABLE ratings AS SELECT record_id AS person, item FROM synthetic_ratings(?, items := 500, "
                "ratings_per_user := 20, seed := 1) ORDER BY person, item", [args.people])
    con.execute("CREATE TABLE people AS SELECT DISTINCT person, (20 + hash(person, 'a') % 50)::INTEGER AS age, "
                "(hash(person, 'z') % 9)::INTEGER AS zone FROM ratings ORDER BY person")
    key = duckdb_anon.new_pseudonym_key()
    duckdb_anon.set_pseudonym_key(con, "bench", key)
    started = time.perf_counter()
    duckdb_anon.publish_tables(con, "rel", persons="people", events="ratings", person="person", qis=["age", "zone"], k=10,
                               items=["item"], m=2, key_name="bench")
    seconds = time.perf_counter() - started
    truth = dict(con.execute("SELECT anon_release_pseudonym(person, 'bench', 'rel'), person FROM people").fetchall())
    print(f"publish_tables on {len(truth):,} people: {seconds:.1f} s")
    print("| table | rows | recovered (core's order) | abs rho | recovered (source order) | abs rho |")
    print("|---|---|---|---|---|---|")
    for table in ("rel_persons", "rel_events"):
        stored = [r[0] for r in con.execute(f"SELECT person FROM {table}").fetchall()]
        in_source_order = sorted(stored, key=lambda p: truth[p])
        ids_sorted = sorted({truth[p] for p in stored})  # the ids of the people in the table: the adversary's best case
        got, rho = attack(stored, truth, ids_sorted)
        ref, ref_rho = attack(in_source_order, truth, ids_sorted)
        print(f"| {table} | {len(stored):,} | {got:,} | {rho:.3f} | {ref:,} | {ref_rho:.3f} |")


if __name__ == "__main__":
    main()

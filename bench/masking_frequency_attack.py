"""The frequency-rank attack on masked names (docs/masking.md): on the example patients table, guess that
the i-th most frequent fake name stands for the i-th most frequent real name (ties in name order) and count
the rows whose real name the guess gives back, without the key (fakes ranked past the last real name guess
nothing). Value-keyed masks (no `by`) against
person-keyed ones (`person := patient_id`), under five fresh keys.

    python bench/masking_frequency_attack.py
"""
from collections import Counter

import duckdb_anon


def ranked(values: list[str]) -> list[str]:
    counts = Counter(values)
    return sorted(counts, key=lambda v: (-counts[v], v))


def recovered(real: list[str], fake: list[str]) -> int:
    guess = dict(zip(ranked(fake), ranked(real)))
    return sum(guess.get(f) == r for r, f in zip(real, fake))  # fakes past the last real name: no guess


def main(keys: int = 5) -> None:
    con = duckdb_anon.connect()
    duckdb_anon.load_fake_values(con, ["en_US"])
    duckdb_anon.load_patients(con)
    for _ in range(keys):
        duckdb_anon.set_pseudonym_key(con, "clinic", duckdb_anon.new_pseudonym_key())
        for keyed, person in (("value", ""), ("person", ", person := patient_id")):
            rows = con.execute(f"SELECT name, anon_fake_name(name, 'clinic'{person}) FROM patients").fetchall()
            real, fake = [r[0] for r in rows], [r[1] for r in rows]
            print(f"keyed on the {keyed:<6}: recovered {recovered(real, fake):5,} / {len(rows):,} rows; "
                  f"{len(set(real))} real names, {len(set(fake)):,} fake names")


if __name__ == "__main__":
    main()

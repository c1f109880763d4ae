"""duckdb_anon.masked_copy on a three-table clinic (patients, visits, prescriptions, with hostile names):
joins kept, nothing real left in masked or pseudonymized columns, one fake name per person in every table,
intervals within a person kept, determinism per key, and refusals that leave nothing behind. Every check
is recomputed with plain SQL or Python over the source and the copy."""
import hashlib
import os
import shutil
from pathlib import Path

import duckdb
import pytest

import duckdb_anon
from duckdb_anon.database_copy import CopyError, masked_copy
from tests.test_roles import KEY, OTHER_KEY, expected_pseudonym as pseudonym

RX = "pre scriptions 'rx'"  # a table name with a space and quotes
DRUG = 'dr"ug name'  # a column name with a double quote and a space
FIRST = ["Ann", "Bob", "Cleo", "Dev", "Eve", "Finn", "Gus", "Hal", "Ivy", "Jo"]
LAST = ["Moss", "Nash", "Oak", "Page", "Quinn", "Reed", "Sun"]
PATIENTS = 300


def make_clinic(path, undeclared: str = "error"):
    """A clinic database file with its declarations; its own fake pools (locale xx_TEST), so Faker is not needed."""
    con = duckdb_anon.connect(str(path))
    con.execute(f"""CREATE TABLE patients AS SELECT range AS patient_id, 'Realname' || range AS name,
                    DATE '1940-01-01' + (range * 97 % 25000)::INTEGER AS birth_date, (10000 + range % 40)::VARCHAR AS zip
                    FROM range({PATIENTS})""")
    con.execute(f"""CREATE TABLE visits AS SELECT 1000 + range AS visit_id, (range * 7) % {PATIENTS} AS patient_id,
                    DATE '2020-01-01' + (range * 13 % 700)::INTEGER AS admitted, DATE '2020-01-01' + (range * 13 % 700)::INTEGER
                    + (range % 9)::INTEGER AS discharged, round(50 + range % 400 * 1.25, 2)::DECIMAL(10, 2) AS cost
                    FROM range(900)""")
    con.execute(f"""CREATE TABLE "{RX.replace('"', '""')}" AS SELECT range AS rx_id, 1000 + (range * 5) % 900 AS visit_id,
                    ['aspirin', 'insulin', 'statin', 'none'][range % 4 + 1] AS "{DRUG.replace('"', '""')}",
                    'Realname' || ((((range * 5) % 900) * 7) % {PATIENTS}) AS patient_name,
                    ((((range * 5) % 900) * 7) % {PATIENTS}) AS patient_id FROM range(1500)""")
    con.executemany("INSERT INTO anon_fake_values (pool_locale, pool_kind, pool) VALUES ('xx_TEST', ?, ?)",
                    [("first_name", FIRST), ("last_name", LAST)])
    by_patient = {"by": "patient_id"}
    declarations = {
        "patients": [("patient_id", "identifier", dict(pseudonymize=True)),
                     ("name", "masked", dict(mask="name", mask_args={**by_patient, "locale": "xx_TEST"})),
                     ("birth_date", "masked", dict(mask="date_shift", mask_args={**by_patient, "days": 60})),
                     ("zip", "quasi_identifier", {})],
        "visits": [("visit_id", "identifier", dict(pseudonymize=True)), ("patient_id", "identifier", dict(pseudonymize=True)),
                   ("admitted", "masked", dict(mask="date_shift", mask_args={**by_patient, "days": 60})),
                   ("discharged", "masked", dict(mask="date_shift", mask_args={**by_patient, "days": 60})),
                   # two identifiers: a keyed mask must name its person (value-keyed masking is refused)
                   ("cost", "masked", dict(mask="noise", mask_args={**by_patient, "ratio": 0.1}))],
        RX: [("rx_id", "identifier", {}), ("visit_id", "identifier", dict(pseudonymize=True)),
             (DRUG, "masked", dict(mask="shuffle")),
             ("patient_name", "masked", dict(mask="name", mask_args={**by_patient, "locale": "xx_TEST"})),
             ("patient_id", "identifier", dict(pseudonymize=True))]}
    rows = [(table, column, role, options.get("pseudonymize", False), options.get("mask"),
             list(options.get("mask_args", {})), [str(v) for v in options.get("mask_args", {}).values()])
            for table, columns in declarations.items() for column, role, options in columns]
    con.executemany("INSERT INTO anon_column_roles (table_name, column_name, role, pseudonymize, mask, mask_args) "
                    "VALUES (?, ?, ?, ?, ?, CASE WHEN len(?::VARCHAR[]) > 0 THEN map(?::VARCHAR[], ?::VARCHAR[]) END)",
                    [(t, c, r, ps, m, k, k, v) for t, c, r, ps, m, k, v in rows])
    con.executemany("INSERT INTO anon_policies (table_name, k, key_name, undeclared) VALUES (?, 1, 'clinic', ?)",
                    [(table, undeclared) for table in declarations])
    con.close()
    return path


def file_digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def clinic(tmp_path_factory):
    """The source, its digest, and copies: under KEY (twice, in two runs) and under OTHER_KEY."""
    folder = tmp_path_factory.mktemp("clinic")
    source = make_clinic(folder / "clinic.duckdb")
    before = file_digest(source)
    summary = masked_copy(source, folder / "copy.duckdb", keys={"clinic": KEY})
    masked_copy(source, folder / "again.duckdb", keys=lambda name: KEY)
    masked_copy(source, folder / "other.duckdb", keys={"clinic": OTHER_KEY})
    con = duckdb.connect()
    for name in ("clinic", "copy", "again", "other"):
        con.execute(f"ATTACH '{folder / name}.duckdb' AS {name} (READ_ONLY)")
    yield {"con": con, "summary": summary, "source": source, "before": before, "folder": folder}
    con.close()


def test_the_source_is_unchanged_and_the_summary_says_what_each_column_became(clinic):
    assert file_digest(clinic["source"]) == clinic["before"]
    became = {(r["table_name"], r["column_name"]): r["became"] for r in clinic["summary"]}
    assert became[("patients", "patient_id")].startswith("keyed pseudonym")
    assert became[(RX, "rx_id")] == "dropped: identifier"
    assert became[("patients", "zip")] == "copied as it is: quasi_identifier"
    stored = clinic["con"].execute("SELECT table_name, column_name, became FROM copy.anon_copy_summary").fetchall()
    assert {(t, c): b for t, c, b in stored} == became
    columns = clinic["con"].execute("SELECT column_name FROM duckdb_columns() WHERE database_name = 'copy' AND table_name = ?",
                                    [RX]).fetchall()
    assert [c for (c,) in columns] == ["visit_id", DRUG, "patient_name", "patient_id"]  # rx_id dropped


def test_joins_give_as_many_rows_in_the_copy_as_in_the_source(clinic):
    con = clinic["con"]
    for db in ("clinic", "copy"):
        counts = con.execute(f"""SELECT (SELECT count(*) FROM {db}.patients p JOIN {db}.visits v USING (patient_id)),
                                        (SELECT count(*) FROM {db}.visits v JOIN {db}."{RX}" r USING (visit_id)),
                                        (SELECT count(*) FROM {db}.patients p JOIN {db}."{RX}" r USING (patient_id))""").fetchall()[0]
        if db == "clinic":
            expected = counts
    assert counts == expected and min(expected) > 0


def test_no_real_value_is_left_in_masked_or_pseudonymized_columns(clinic):
    con = clinic["con"]
    real_names = {f"Realname{i}" for i in range(PATIENTS)}
    copied = {v for (v,) in con.execute(f'SELECT name FROM copy.patients UNION SELECT patient_name FROM copy."{RX}"').fetchall()}
    assert not copied & real_names and copied <= {f"{f} {l}" for f in FIRST for l in LAST}
    ids = {str(v) for (v,) in con.execute("SELECT patient_id FROM clinic.patients UNION SELECT visit_id FROM clinic.visits").fetchall()}
    pseudonyms = {v for (v,) in con.execute(f"""SELECT patient_id FROM copy.patients UNION SELECT patient_id FROM copy.visits
                                                UNION SELECT visit_id FROM copy.visits UNION SELECT visit_id FROM copy."{RX}"
                                                UNION SELECT patient_id FROM copy."{RX}" """).fetchall()}
    assert not pseudonyms & ids
    assert {pseudonym(KEY, i) for i in range(PATIENTS)} == {v for (v,) in con.execute("SELECT patient_id FROM copy.patients").fetchall()}


def test_each_person_has_one_fake_name_in_every_table_and_another_under_another_key(clinic):
    con = clinic["con"]
    names = {}
    for db in ("copy", "other"):
        rows = con.execute(f'SELECT patient_id, name FROM {db}.patients UNION SELECT patient_id, patient_name FROM {db}."{RX}"').fetchall()
        per_person = {}
        for person, name in rows:
            per_person.setdefault(person, set()).add(name)
        assert all(len(found) == 1 for found in per_person.values())
        names[db] = {pid: found.pop() for pid, found in per_person.items()}
    by_person = {i: (names["copy"][pseudonym(KEY, i)], names["other"][pseudonym(OTHER_KEY, i)]) for i in range(PATIENTS)}
    assert sum(a != b for a, b in by_person.values()) > PATIENTS // 2  # 70 names: about 69 in 70 differ


def test_the_same_key_gives_the_same_copy(clinic):
    con = clinic["con"]
    for table in ("patients", "visits", f'"{RX}"'):
        differences = con.execute(f"SELECT (SELECT count(*) FROM (FROM copy.{table} EXCEPT ALL FROM again.{table})), "
                                  f"(SELECT count(*) FROM (FROM again.{table} EXCEPT ALL FROM copy.{table}))").fetchall()[0]
        assert differences == (0, 0)


def test_date_shift_keeps_the_intervals_of_each_person(clinic):
    con = clinic["con"]
    source = con.execute("SELECT visit_id, patient_id, admitted, discharged FROM clinic.visits").fetchall()
    copied = {v: (a, d) for v, a, d in con.execute("SELECT visit_id, admitted, discharged FROM copy.visits").fetchall()}
    births = {p: b for p, b in con.execute("SELECT patient_id, birth_date FROM copy.patients").fetchall()}
    real_births = dict(con.execute("SELECT patient_id, birth_date FROM clinic.patients").fetchall())
    offsets = {}
    for visit, person, admitted, discharged in source:
        new_admitted, new_discharged = copied[pseudonym(KEY, visit)]
        assert new_discharged - new_admitted == discharged - admitted  # a stay keeps its length
        offsets.setdefault(person, set()).add((new_admitted - admitted).days)
    for person, found in offsets.items():  # one shift per person, in every table
        assert found == {(births[pseudonym(KEY, person)] - real_births[person]).days}
        assert abs(next(iter(found))) <= 60
    assert len({next(iter(found)) for found in offsets.values()}) > 10


def test_shuffle_and_noise_in_the_copy(clinic):
    con = clinic["con"]
    drug = '"' + DRUG.replace('"', '""') + '"'
    drugs = [con.execute(f'SELECT {drug} AS d, count(*) FROM {db}."{RX}" GROUP BY d ORDER BY d').fetchall()
             for db in ("clinic", "copy")]
    assert drugs[0] == drugs[1]  # the same drugs, as often
    per_visit = [dict(con.execute(f'SELECT visit_id, list({drug} ORDER BY {drug}) FROM {db}."{RX}" GROUP BY visit_id').fetchall())
                 for db in ("clinic", "copy")]
    moved = sum(per_visit[1][pseudonym(KEY, visit)] != drugs_of_visit for visit, drugs_of_visit in per_visit[0].items())
    assert moved > len(per_visit[0]) // 2  # the link between a drug and the rest of its row is cut
    real = dict(con.execute("SELECT visit_id, cost FROM clinic.visits").fetchall())
    noisy = {v: c for v, c in con.execute("SELECT visit_id, cost FROM copy.visits").fetchall()}
    for visit, cost in real.items():
        assert abs(float(noisy[pseudonym(KEY, visit)]) - float(cost)) <= 0.1 * float(cost) + 0.01


def test_an_undeclared_column_refuses_the_copy_naming_table_and_column_and_leaves_nothing(clinic, tmp_path):
    source = Path(shutil.copy(clinic["source"], tmp_path / "clinic.duckdb"))
    with duckdb.connect(str(source)) as con:
        con.execute("ALTER TABLE visits ADD COLUMN diagnosis VARCHAR DEFAULT 'flu'")
    target = tmp_path / "copy.duckdb"
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(CopyError) as err:
        masked_copy(source, target, keys={"clinic": KEY})
    assert "'visits'" in str(err.value) and "'diagnosis'" in str(err.value) and "no declared role" in str(err.value)
    assert sorted(os.listdir(tmp_path)) == before  # no target, no temporary file
    with duckdb.connect(str(source)) as con:  # unless the policy drops undeclared columns
        con.execute("UPDATE anon_policies SET undeclared = 'drop' WHERE table_name = 'visits'")
    summary = masked_copy(source, target, keys={"clinic": KEY})
    assert any(r["column_name"] == "diagnosis" and r["became"].startswith("dropped") for r in summary)
    with duckdb.connect(str(target), read_only=True) as copy:
        assert "diagnosis" not in [c for (c,) in copy.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = 'visits'").fetchall()]


def test_bad_paths_and_keys_are_refused_before_anything_is_written(clinic, tmp_path):
    source = Path(shutil.copy(clinic["source"], tmp_path / "clinic.duckdb"))
    for target, keys, words in [(source, {"clinic": KEY}, "argument 'target_path'"),
                                (tmp_path / "copy.duckdb", {}, "argument 'keys': no key for key_name 'clinic'"),
                                (tmp_path / "copy.duckdb", {"clinic": "not-a-key"}, "argument 'keys'"),
                                (tmp_path / "nowhere" / "copy.duckdb", {"clinic": KEY}, "argument 'target_path'")]:
        with pytest.raises(CopyError, match=f"masked_copy\\(\\): {words}"):
            masked_copy(source, target, keys=keys)
    with pytest.raises(CopyError, match="argument 'source_path'"):
        masked_copy(tmp_path / "none.duckdb", tmp_path / "copy.duckdb")
    assert sorted(os.listdir(tmp_path)) == ["clinic.duckdb"]
    (tmp_path / "copy.duckdb").write_text("keep me")
    with pytest.raises(CopyError, match="exists"):
        masked_copy(source, tmp_path / "copy.duckdb", keys={"clinic": KEY})
    assert (tmp_path / "copy.duckdb").read_text() == "keep me"

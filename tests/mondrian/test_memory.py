"""mondrian() within a memory limit on a high-cardinality table (nearly every row its own QI vector).

A scaled-down copy of the 10M-row, 2 GB run of bench/bench_highcard.py: 500k such rows under 240 MB.
The generated recursion has to spill what it keeps; it now needs about 200 MB here (it fails under 170
MB). When each level joined the cells' keys back, the join's hash table over every cell, never spilled,
made this run need about 300 MB, and the 10M one fail after 15 minutes. The release is checked in plain
SQL: every row kept once, every class of at least k rows.

The checked recursion (a sensitive column's l-diversity, suppression) gets the same kind of check on
100k rows, l = 2 and 20 % suppression, under 300 MB (l alone needs about 250 MB; 500k rows complete
under 700 MB). When each level's window over the cuts' sides held the whole table's sensitive
distribution per side, 100k rows did not complete under 500 MB, nor 500k under 2 GB.
"""
ROWS, LIMIT, K = 500_000, "240MB", 10
CHECKED_ROWS, CHECKED_LIMIT, L, SUPPRESSION = 100_000, "300MB", 2, 0.2  # (1 %: no row suppressed)
QIS = "age, zip, sex, dob, income"


def _high_cardinality(con, tmp_path, rows):
    """Table highcard: `rows` rows, nearly each its own QI vector, and a sensitive column of 1,000 values;
    then the settings of a run under a memory limit (2 threads, spilling to `tmp_path`)."""
    con.execute(f"""CREATE TABLE highcard AS
        SELECT range AS id, (17 + hash(range, 1) % 74)::INTEGER AS age, (10000 + hash(range, 2) % 90000)::VARCHAR AS zip,
               CASE WHEN hash(range, 3) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
               DATE '1935-01-01' + (hash(range, 5) % 30000)::INTEGER AS dob, (hash(range, 6) % 200000)::INTEGER AS income,
               (hash(range, 7) % 1000)::INTEGER AS diagnosis
        FROM range({rows})""")
    distinct = con.execute(f"SELECT count(*) FROM (SELECT DISTINCT {QIS} FROM highcard)").fetchall()[0][0]
    assert distinct > 0.99 * rows  # the shape under test: cells of one row
    con.execute("SET threads = 2")  # the memory a run needs grows with its threads
    con.execute("SET temp_directory = ?", [str(tmp_path / "spill")])


def test_high_cardinality_rows_complete_under_a_tight_memory_limit(con, tmp_path):
    _high_cardinality(con, tmp_path, ROWS)
    con.execute(f"SET memory_limit = '{LIMIT}'")
    con.execute("CREATE TABLE rel AS SELECT * FROM mondrian('highcard', ['age', 'zip', 'sex', 'dob', 'income'], ?)", [K])
    con.execute("RESET memory_limit")
    kept, missing = con.execute("""
        SELECT (SELECT count(*) FROM rel),
               (SELECT count(*) FROM (SELECT id FROM highcard EXCEPT ALL SELECT id FROM rel))""").fetchall()[0]
    assert (kept, missing) == (ROWS, 0)
    smallest, classes = con.execute(
        f"SELECT min(n), count(*) FROM (SELECT count(*) AS n FROM rel GROUP BY {QIS})").fetchall()[0]
    assert smallest >= K
    assert classes > ROWS // (4 * K)  # the table was partitioned, not left in a few classes


def test_l_diverse_release_with_suppression_completes_under_a_tight_memory_limit(con, tmp_path):
    _high_cardinality(con, tmp_path, CHECKED_ROWS)
    con.execute(f"SET memory_limit = '{CHECKED_LIMIT}'")
    con.execute("CREATE TABLE rel AS SELECT * FROM mondrian('highcard', ['age', 'zip', 'sex', 'dob', 'income'], ?, "
                "sensitive := 'diagnosis', l := ?, max_suppression := ?)", [K, L, SUPPRESSION])
    con.execute("RESET memory_limit")
    # every row once, with its own sensitive value, kept or suppressed (every QI shown as '*')
    rows, changed = con.execute("""
        SELECT (SELECT count(*) FROM rel),
               (SELECT count(*) FROM (SELECT id, diagnosis FROM highcard EXCEPT ALL SELECT id, diagnosis FROM rel))""").fetchall()[0]
    assert (rows, changed) == (CHECKED_ROWS, 0)
    suppressed, partly = con.execute("""
        SELECT count(*) FILTER (WHERE age = '*' AND zip = '*' AND sex = '*' AND dob = '*' AND income = '*'),
               count(*) FILTER (WHERE (age = '*') <> (income = '*'))
        FROM rel""").fetchall()[0]
    assert partly == 0
    assert 0 < suppressed <= int(SUPPRESSION * CHECKED_ROWS)  # suppressed pieces left the recursion once
    smallest, fewest, classes = con.execute(f"""
        SELECT min(n), min(d), count(*) FROM (SELECT count(*) AS n, count(DISTINCT diagnosis) AS d
                                              FROM rel WHERE age <> '*' GROUP BY {QIS})""").fetchall()[0]
    assert smallest >= K and fewest >= L
    assert classes > CHECKED_ROWS // (4 * K)  # the table was partitioned, not left in a few classes

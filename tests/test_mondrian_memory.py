"""mondrian() within a memory limit on a high-cardinality table (nearly every row its own QI vector).

A scaled-down copy of the 10M-row, 2 GB run of bench/bench_highcard.py: 500k such rows under 240 MB
(this run needed about 200 MB; it failed under 170 MB). The generated recursion has to spill what it
keeps: when each level joined the cells' keys back, the join's hash table over every cell, never
spilled, made this run fail under 240 MB (it needed about 300 MB), and the 10M one after 15
minutes. The release is checked in plain SQL: every row kept once, every class of at least k rows.
"""
ROWS, LIMIT, K = 500_000, "240MB", 10


def test_high_cardinality_rows_complete_under_a_tight_memory_limit(con, tmp_path):
    con.execute(f"""CREATE TABLE highcard AS
        SELECT range AS id, (17 + hash(range, 1) % 74)::INTEGER AS age, (10000 + hash(range, 2) % 90000)::VARCHAR AS zip,
               CASE WHEN hash(range, 3) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
               DATE '1935-01-01' + (hash(range, 5) % 30000)::INTEGER AS dob, (hash(range, 6) % 200000)::INTEGER AS income
        FROM range({ROWS})""")
    distinct = con.execute("SELECT count(*) FROM (SELECT DISTINCT age, zip, sex, dob, income FROM highcard)").fetchall()[0][0]
    assert distinct > 0.99 * ROWS  # the shape under test: cells of one row
    con.execute("SET threads = 2")  # the memory a run needs grows with its threads
    con.execute("SET temp_directory = ?", [str(tmp_path / "spill")])
    con.execute(f"SET memory_limit = '{LIMIT}'")
    con.execute("CREATE TABLE rel AS SELECT * FROM mondrian('highcard', ['age', 'zip', 'sex', 'dob', 'income'], ?)", [K])
    con.execute("RESET memory_limit")
    kept, missing = con.execute("""
        SELECT (SELECT count(*) FROM rel),
               (SELECT count(*) FROM (SELECT id FROM highcard EXCEPT ALL SELECT id FROM rel))""").fetchall()[0]
    assert (kept, missing) == (ROWS, 0)
    smallest, classes = con.execute(
        "SELECT min(n), count(*) FROM (SELECT count(*) AS n FROM rel GROUP BY age, zip, sex, dob, income)").fetchall()[0]
    assert smallest >= K
    assert classes > ROWS // (4 * K)  # the table was partitioned, not left in a few classes

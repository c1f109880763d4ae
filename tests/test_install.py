"""Installation: idempotent, persisted in the database file, usable from a plain DuckDB connection."""
import re

import duckdb
import pytest

import duckdb_anon


def test_install_twice_and_version(tmp_path):
    path = str(tmp_path / "db.duckdb")
    con = duckdb_anon.connect(path)
    duckdb_anon.install(con)
    assert duckdb_anon.installed_version(con) == duckdb_anon.__version__
    con.close()
    con = duckdb.connect(path)  # a database that already has the functions
    duckdb_anon.install(con)
    con.close()


def test_pure_sql_functions_work_without_the_package(tmp_path):
    path = str(tmp_path / "db.duckdb")
    con = duckdb_anon.connect(path)
    con.execute("CREATE TABLE p AS SELECT range AS id, range % 40 AS age, ['a','b','c'][range % 3 + 1] AS zip FROM range(100)")
    con.execute("CREATE VIEW p_k5 AS SELECT * FROM mondrian('p', ['age', 'zip'], 5)")
    expected = con.execute("SELECT * FROM p_k5 ORDER BY id").fetchall()
    con.close()
    plain = duckdb.connect(path)  # never imports or installs anything
    assert plain.execute("SELECT * FROM p_k5 ORDER BY id").fetchall() == expected
    assert plain.execute("SELECT achieved_k FROM release_measures('p_k5', ['age', 'zip'])").fetchone()[0] >= 5
    plain.close()


def test_plain_client_can_extract_localities_but_not_walk(tmp_path):
    path = str(tmp_path / "db.duckdb")
    con = duckdb_anon.connect(path)
    con.execute("CREATE TABLE t AS SELECT range AS id, (range * 7 % 31)::DOUBLE AS v FROM range(60)")
    con.close()
    plain = duckdb.connect(path)
    assert plain.execute("SELECT count(*) FROM localities('t', 'v', segment_size := 20)").fetchone()[0] > 0
    plain.execute("CREATE TABLE locs AS SELECT * FROM localities('t', 'v', segment_size := 20)")
    try:
        plain.execute("SELECT * FROM random_walk('t', 'v', 'locs', segment_size := 20)").fetchall()
        raise AssertionError("random_walk ran without its Python kernel")
    except duckdb.Error as err:
        assert "anon_random_walk" in str(err)
    plain.close()
    con = duckdb_anon.connect(path)  # installing again brings the kernel back on this connection
    assert con.execute("SELECT count(*) FROM random_walk('t', 'v', 'locs', iterations := 10, segment_size := 20)").fetchone()[0] == 60
    con.close()


# Every user-facing function, called from a process that never imports duckdb_anon. Adding a function to
# sql/ without listing it here fails test_every_public_function_is_listed.
PLAIN_CLIENT_CALLS = {
    "mondrian": "SELECT * FROM mondrian('p', ['age', 'zip'], 5)",
    "mondrian_classes": "SELECT * FROM mondrian_classes('p', ['age', 'zip'], 5, sensitive := 'diag', l := 2)",
    "equivalence_classes": "SELECT * FROM equivalence_classes('p_k5', ['age', 'zip'])",
    "release_measures": "SELECT * FROM release_measures('p_k5', ['age', 'zip'])",
    "ncp": "SELECT * FROM ncp('p_k5', 'p', ['age', 'zip'], 'id')",
    "distortion": "SELECT * FROM distortion('p_k5_typed', 'p', ['age'], 'id')",
    "class_profile": "SELECT * FROM class_profile('p_k5', ['age', 'zip'], sensitive := 'diag')",
    "privacy_measures": "SELECT * FROM privacy_measures('p_k5', ['age', 'zip'], sensitive := 'diag')",
    "risk_measures": "SELECT * FROM risk_measures('p_k5', ['age', 'zip'])",
    "record_risks": "SELECT * FROM record_risks('p_k5', ['age', 'zip'])",
    "hierarchy_from_text": "SELECT * FROM hierarchy_from_text('h.txt')",
    "hierarchy_intervals": "SELECT * FROM hierarchy_intervals('p', 'age', [5, 10])",
    "hierarchy_dates": "SELECT * FROM hierarchy_dates('p', 'seen')",
    "localities": "SELECT * FROM localities('p', 'age', segment_size := 20)",
    "check_localities": "SELECT 1 FROM (SELECT count(*) FROM check_localities('p', 'age', 'locs'))",
    "synthetic_ratings": "SELECT * FROM synthetic_ratings(50, items := 40, ratings_per_user := 10)",
    "synthetic_aux": "SELECT * FROM synthetic_aux('ratings', 5, known_items := 3)",
    "realistic_ratings": "SELECT * FROM realistic_ratings(20)",
    "deanonymize": "SELECT * FROM deanonymize('ratings', 'aux')",
    "deanonymize_evaluate": "SELECT * FROM deanonymize_evaluate('ratings', 'aux', 'truth')",
    "linkage_nearest": "SELECT * FROM linkage_nearest('p', 'p', ['age', 'zip'], 'id')",
    "linkage_classes": "SELECT * FROM linkage_classes('p_k5', 'p', ['age', 'zip'], 'id')",
    "linkage_rank": "SELECT * FROM linkage_rank('p', 'p', ['age'], 'id')",
    "linkage_pattern": "SELECT * FROM linkage_pattern('p', 'p', 'age', 'id')",
    "anonymized": "SELECT * FROM anonymized('p')",
    "suggest_roles": "SELECT * FROM suggest_roles('p')",
    "suggest_roles_sql": "SELECT suggest_roles_sql('p')",
    "release_differencing": "SELECT * FROM release_differencing('p_k5', 'p_k5', ['age', 'zip'], 'id')",
    "anon_compile_policies": "SELECT anon_compile_policies()",
    "privacy_unit_rows": "SELECT * FROM privacy_unit_rows('p')",
    "duckdb_anon_version": "SELECT duckdb_anon_version()",
    "duckdb_anon_install_stamp": "SELECT duckdb_anon_install_stamp()",
    "hierarchy_from_parents": "SELECT * FROM hierarchy_from_parents('edges')",
    "km_check": "SELECT * FROM km_check('ratings', 'record_id', ['item'], 2, 2)",
    "km_measures": "SELECT * FROM km_measures('ratings', 'ratings', ['item'])",
    "table_release_join_check": "SELECT * FROM table_release_join_check('ratings', 'ratings', 'record_id', 'record_id')",
}
NEEDS_PYTHON = {"random_walk": "SELECT * FROM random_walk('p', 'age', 'locs', segment_size := 20)",
                "dp_aggregate": "SELECT * FROM dp_aggregate('p', ['zip'], epsilon := 1, delta := 1e-6, max_groups_contributed := 1)",
                "dp_bounded_aggregates": "SELECT * FROM dp_bounded_aggregates('p', ['zip'], max_groups_contributed := 1)",
                "km_anonymity": "SELECT * FROM km_anonymity('ratings', ['item'], 2, 1, person := 'record_id')"}


def test_every_public_function_is_listed(con):
    public = {name for (name,) in con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type LIKE '%macro%' "
        "AND NOT starts_with(function_name, 'anon_') AND NOT internal").fetchall()}
    assert public == (set(PLAIN_CLIENT_CALLS) | set(NEEDS_PYTHON)) - {"anon_compile_policies"}


def test_every_pure_sql_function_runs_from_a_plain_client(tmp_path):
    import subprocess
    import sys
    import json
    path = tmp_path / "file.duckdb"
    (tmp_path / "h.txt").write_text("a;g;*\nb;g;*\nc;*")
    con = duckdb_anon.connect(str(path))
    con.execute("""CREATE TABLE p AS SELECT range AS id, 20 + range % 30 AS age, range % 7 AS zip,
                   ['x', 'y', 'z'][range % 3 + 1] AS diag, DATE '2020-01-01' + range::INTEGER AS seen FROM range(200)""")
    con.execute("CREATE TABLE p_k5 AS SELECT * FROM mondrian('p', ['age', 'zip'], 5)")
    con.execute("CREATE TABLE p_k5_typed AS SELECT * FROM mondrian('p', ['age', 'zip'], 5, output := 'typed')")
    con.execute("CREATE TABLE locs AS SELECT * FROM localities('p', 'age', segment_size := 20)")
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(50, items := 40, ratings_per_user := 10)")
    con.execute("CREATE TABLE aux AS SELECT * FROM synthetic_aux('ratings', 5, known_items := 3)")
    con.execute("CREATE TABLE truth AS SELECT DISTINCT target_id, target_id AS record_id FROM aux")
    con.execute("CREATE TABLE edges AS SELECT * FROM (VALUES ('a', 'g'), ('b', 'g')) t(value, parent)")
    duckdb_anon.declare_role(con, "p", "age", "quasi_identifier")
    duckdb_anon.declare_role(con, "p", "zip", "quasi_identifier")
    duckdb_anon.set_policy(con, "p", 5, undeclared="drop")
    duckdb_anon.apply_policies(con)
    duckdb_anon.declare_privacy_unit(con, "p", "id")
    con.close()
    script = (
        "import json, sys, duckdb\n"
        f"con = duckdb.connect({str(path)!r})\n"
        "calls, python_only = json.loads(sys.argv[1]), json.loads(sys.argv[2])\n"
        "out = {name: len(con.execute(sql).fetchall()) for name, sql in calls.items()}\n"
        "for name, sql in python_only.items():\n"
        "    try:\n"
        "        con.execute(sql).fetchall(); out[name] = 'ran'\n"
        "    except duckdb.Error as err:\n"
        "        out[name] = str(err)\n"
        "assert 'duckdb_anon' not in sys.modules\n"
        "print(json.dumps(out))\n")
    result = subprocess.run([sys.executable, "-c", script, json.dumps(PLAIN_CLIENT_CALLS), json.dumps(NEEDS_PYTHON)],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert all(rows[name] > 0 for name in PLAIN_CLIENT_CALLS), rows
    assert "anon_random_walk" in rows["random_walk"]
    assert all("anon_dp_" in rows[name] for name in ("dp_aggregate", "dp_bounded_aggregates")), rows
    assert "needs_the_duckdb_anon_python_package" in rows["km_anonymity"], rows


def test_two_connections_to_one_file_in_one_process(tmp_path):
    """DuckDB shares one database instance between connections to the same file, so the Python kernel is
    registered once for both; the second connect works, and so does the walk after the first closes."""
    path = str(tmp_path / "shared.duckdb")
    first = duckdb_anon.connect(path)
    first.execute("CREATE TABLE t AS SELECT range AS id, (range * 7 % 31)::DOUBLE AS v FROM range(60)")
    first.execute("CREATE TABLE locs AS SELECT * FROM localities('t', 'v', segment_size := 20)")
    second = duckdb_anon.connect(path)
    first.close()
    walked = second.execute("SELECT count(*), count(DISTINCT v) FROM random_walk('t', 'v', 'locs', iterations := 10, segment_size := 20)").fetchall()
    assert walked[0][0] == 60 and walked[0][1] > 1
    second.close()


def _connect_at_once(path, threads=4):
    """`threads` threads call connect(path) at the same moment; returns their connections and errors."""
    import threading
    barrier = threading.Barrier(threads)
    connections, errors = [], []

    def run():
        barrier.wait()
        try:
            connections.append(duckdb_anon.connect(path))
        except Exception as err:  # collected: the assertion below names every failure
            errors.append(repr(err))

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return connections, errors


def _macros(con):
    return con.execute("SELECT count(DISTINCT function_name) FROM duckdb_functions() "
                       "WHERE function_type LIKE '%macro%' AND NOT internal").fetchall()[0][0]


def test_threads_connect_to_a_new_file_at_once(tmp_path):
    path = str(tmp_path / "new.duckdb")
    connections, errors = _connect_at_once(path)
    assert errors == [] and len(connections) == 4
    connections[0].execute("CREATE TABLE p AS SELECT range AS id, range % 40 AS age FROM range(100)")
    for con in connections:
        assert duckdb_anon.installed_version(con) == duckdb_anon.__version__
        assert con.execute("SELECT min(n) FROM (SELECT count(*) AS n FROM mondrian('p', ['age'], 5) GROUP BY age)"
                           ).fetchall()[0][0] >= 5
    reference = duckdb_anon.connect()
    assert _macros(connections[0]) == _macros(reference)
    for con in connections + [reference]:
        con.close()


def test_threads_connect_to_an_installed_file_at_once(tmp_path):
    path = str(tmp_path / "installed.duckdb")
    duckdb_anon.connect(path).close()
    connections, errors = _connect_at_once(path)
    assert errors == [] and len(connections) == 4
    for con in connections:
        assert duckdb_anon.installed_version(con) == duckdb_anon.__version__
        con.close()


def test_install_waits_out_a_writer_that_holds_a_macro(tmp_path):
    """Another connection to the same file (not going through install) holds an uncommitted change to one of
    the macros; the install retries until that writer commits, instead of failing on the conflict."""
    import threading
    path = str(tmp_path / "busy.duckdb")
    duckdb_anon.connect(path).close()
    writer = duckdb.connect(path)
    writer.execute("BEGIN TRANSACTION")
    writer.execute("CREATE OR REPLACE MACRO anon_is_numeric(type_name) AS false")
    timer = threading.Timer(0.2, lambda: writer.execute("ROLLBACK"))
    timer.start()
    con = duckdb.connect(path)
    duckdb_anon.install(con)
    timer.join()
    assert duckdb_anon.installed_version(con) == duckdb_anon.__version__
    con.close()
    writer.close()


def test_a_reader_never_sees_half_an_install(tmp_path):
    """While a fresh file is being installed, another connection counts the macros over and over: it sees
    none or all of them."""
    import threading
    path = str(tmp_path / "watched.duckdb")
    reader = duckdb.connect(path)
    done = threading.Event()
    seen = set()

    def watch():
        watcher = reader.cursor()
        while not done.is_set():
            seen.add(_macros(watcher))
        watcher.close()

    thread = threading.Thread(target=watch)
    thread.start()
    con = duckdb.connect(path)
    duckdb_anon.install(con)
    done.set()
    thread.join()
    full = _macros(con)
    assert full > 50 and seen <= {0, full}, sorted(seen)
    con.close()
    reader.close()


def test_read_only_connections(tmp_path):
    path = str(tmp_path / "ro.duckdb")
    duckdb.connect(path).close()  # an empty file: nothing installed
    try:
        duckdb_anon.connect(path, access_mode="READ_ONLY")
        raise AssertionError("a read-only connection to a file without the macros was accepted")
    except duckdb.InvalidInputException as err:
        assert "install(): argument 'con'" in str(err) and "read-only" in str(err)
    con = duckdb_anon.connect(path)  # the failed attempt left the file closed, so this can open it read-write
    con.execute("CREATE TABLE t AS SELECT range AS id, (range * 7 % 31)::DOUBLE AS v FROM range(60)")
    con.execute("CREATE TABLE locs AS SELECT * FROM localities('t', 'v', segment_size := 20)")
    con.close()
    readers = [duckdb_anon.connect(path, access_mode="READ_ONLY") for _ in range(2)]
    for reader in readers:  # the kernel is registered: the walk runs
        assert reader.execute("SELECT count(*) FROM random_walk('t', 'v', 'locs', iterations := 10, segment_size := 20)"
                              ).fetchall()[0][0] == 60
        reader.close()


def test_a_file_open_in_another_process(tmp_path):
    import subprocess
    import sys
    path = str(tmp_path / "held.duckdb")
    duckdb_anon.connect(path).close()
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, sys; held = duckdb.connect({path!r}); print('open', flush=True); "
                               "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        try:
            duckdb_anon.connect(path)
            raise AssertionError("a second process opened the file read-write")
        except duckdb.IOException as err:
            assert "connect(): argument 'database'" in str(err) and "another process" in str(err)
    finally:
        holder.communicate("", timeout=60)


# The catalog tables as an older version created them: their CHECK constraints refuse 'masked' and 'km'.
OLD_CATALOG = """
CREATE TABLE anon_column_roles (
    table_name VARCHAR NOT NULL, column_name VARCHAR NOT NULL,
    role VARCHAR NOT NULL CHECK (role IN ('identifier', 'quasi_identifier', 'sensitive', 'insensitive')),
    hierarchy VARCHAR, pseudonymize BOOLEAN NOT NULL DEFAULT false, column_index INTEGER, data_type VARCHAR,
    PRIMARY KEY (table_name, column_name));
CREATE TABLE anon_releases (
    name VARCHAR PRIMARY KEY, source_table VARCHAR NOT NULL,
    method VARCHAR NOT NULL CHECK (method IN ('policy', 'mondrian')),
    fingerprint VARCHAR, arguments VARCHAR, created_at TIMESTAMP NOT NULL, rows BIGINT NOT NULL, qis VARCHAR[] NOT NULL,
    k BIGINT, achieved_k BIGINT, sensitive VARCHAR, achieved_l BIGINT, achieved_t DOUBLE, ncp_percent DOUBLE);
INSERT INTO anon_column_roles VALUES ('old', 'age', 'quasi_identifier', NULL, false, 1, 'INTEGER');
INSERT INTO anon_releases VALUES ('old_m', 'old', 'mondrian', NULL, '{"k": 5}', TIMESTAMP '2026-01-02 03:04:05', 40,
                                  ['age'], 5, 6, NULL, NULL, NULL, 12.5);
"""


def test_install_upgrades_an_older_catalog_keeping_every_row(tmp_path):
    """A file made by an older version: install re-creates the catalog tables whose constraint refuses a
    value this version writes (a k^m release, a masked role), and every row stays as it was."""
    path = str(tmp_path / "old.duckdb")
    with duckdb.connect(path) as plain:
        plain.execute(OLD_CATALOG)
        before = {t: plain.execute(f"SELECT * FROM {t}").fetchall() for t in ("anon_column_roles", "anon_releases")}
    con = duckdb_anon.connect(path)
    for table, rows in before.items():  # the old columns hold the old values (later columns are NULL)
        width = len(rows[0])
        assert [r[:width] for r in con.execute(f"SELECT * FROM {table}").fetchall()] == rows, table
    con.execute("CREATE TABLE fr AS SELECT p AS person, i AS item FROM range(8) a(p), range(4) b(i)")
    duckdb_anon.publish_km(con, "fr", "fr_km", items=["item"], k=3, m=2, person="person", person_output="raw")
    con.execute("CREATE TABLE people AS SELECT range AS id, 'Ann' AS name FROM range(3)")
    duckdb_anon.declare_role(con, "people", "name", "masked", mask="name")
    assert con.execute("SELECT name, method FROM anon_releases ORDER BY name").fetchall() == [("fr_km", "km"), ("old_m", "mondrian")]
    con.close()


CATALOG = """SELECT 'function' AS kind, function_name AS name, coalesce(macro_definition, '') AS text, parameters::VARCHAR AS extra
             FROM duckdb_functions() WHERE database_name = current_database() AND function_type IN ('macro', 'table_macro')
             UNION ALL SELECT 'table', table_name, sql, '' FROM duckdb_tables() WHERE database_name = current_database()
             UNION ALL SELECT 'view', view_name, sql, '' FROM duckdb_views() WHERE database_name = current_database() AND NOT internal
             UNION ALL SELECT 'row', 'anon_catalog_people_digested', count(*)::VARCHAR, '' FROM anon_catalog_people_digested
             ORDER BY ALL"""


def catalog(con) -> list[tuple]:
    """CATALOG's rows, each EXCLUDE list's names sorted (DuckDB writes them back in no fixed order)."""
    def sort_excluded(text):
        return re.sub(r"EXCLUDE \(([^()]*)\)", lambda m: "EXCLUDE (" + ", ".join(sorted(m.group(1).split(", "))) + ")", text)
    return [(kind, name, sort_excluded(text), extra) for kind, name, text, extra in con.execute(CATALOG).fetchall()]


def test_a_new_in_memory_database_from_the_template_holds_what_an_install_writes(tmp_path, monkeypatch):
    """connect() fills an in-memory database from the install template (made on first use under
    $DUCKDB_ANON_CACHE): the same macros, tables and views, text for text, as install() on an empty one;
    a template of another stamp is removed when this one is made."""
    from duckdb_anon import _install

    monkeypatch.setenv("DUCKDB_ANON_CACHE", str(tmp_path / "cache"))
    _install._template.cache_clear()
    try:
        (tmp_path / "cache").mkdir()
        (tmp_path / "cache" / "installed-0123.duckdb").write_bytes(b"an older version's template")
        copied = duckdb_anon.connect()
        assert [p.name for p in (tmp_path / "cache").iterdir()] == [f"installed-{_install.install_stamp()}.duckdb"]
        installed = duckdb_anon.install(duckdb.connect())
        assert catalog(copied) == catalog(installed)
        assert len(catalog(copied)) > 250
        copied.execute("CREATE TABLE t AS SELECT range AS id, range % 9 AS a FROM range(40)")
        assert copied.execute("SELECT count(*) FROM mondrian('t', ['a'], 5)").fetchall() == [(40,)]
        assert duckdb_anon.connect().execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 't'").fetchall() == [(0,)]
    finally:
        _install._template.cache_clear()


def test_without_a_writable_cache_connect_installs(tmp_path, monkeypatch):
    from duckdb_anon import _install

    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("DUCKDB_ANON_CACHE", str(blocked / "cache"))
    _install._template.cache_clear()
    try:
        con = duckdb_anon.connect()
        assert duckdb_anon.installed_version(con) == duckdb_anon.__version__
        assert catalog(con) == catalog(duckdb_anon.install(duckdb.connect()))
    finally:
        _install._template.cache_clear()


def test_connect_over_this_exact_install_writes_only_the_declarations(tmp_path):
    """A file holding this install's stamp: connect() compiles the declarations again (a plain client may
    have changed them) and writes no other macro; install() writes every one; a file of another stamp
    (another version or another text of the package) is installed over by connect()."""
    from duckdb_anon import _install

    path = str(tmp_path / "db.duckdb")
    con = duckdb_anon.connect(path)
    con.execute("CREATE TABLE p AS SELECT range AS id, range % 40 AS age FROM range(100)")
    con.close()
    plain = duckdb.connect(path)
    plain.execute("CREATE OR REPLACE MACRO anon_is_qi(qis, c) AS false")  # a marker connect() must not overwrite
    plain.execute("INSERT INTO anon_column_roles (table_name, column_name, role) VALUES ('p', 'id', 'identifier'), "
                  "('p', 'age', 'quasi_identifier')")
    plain.execute("INSERT INTO anon_policies (table_name, k) VALUES ('p', 10)")
    plain.close()
    con = duckdb_anon.connect(path)
    assert _install.installed_stamp(con) == _install.install_stamp()
    assert con.execute("SELECT macro_definition FROM duckdb_functions() WHERE function_name = 'anon_is_qi'").fetchall() == [("false",)]
    assert con.execute("SELECT count(*) FROM anon_policy_problems() WHERE table_name = 'p'").fetchall() == [(0,)]  # compiled
    duckdb_anon.install(con)
    assert con.execute("SELECT macro_definition FROM duckdb_functions() WHERE function_name = 'anon_is_qi'").fetchall() != [("false",)]
    con.execute("CREATE OR REPLACE MACRO anon_is_qi(qis, c) AS false")
    con.execute("CREATE OR REPLACE MACRO duckdb_anon_install_stamp() AS 'another'")
    con.close()
    con = duckdb_anon.connect(path)
    assert con.execute("SELECT macro_definition FROM duckdb_functions() WHERE function_name = 'anon_is_qi'").fetchall() != [("false",)]
    assert _install.installed_stamp(con) == _install.install_stamp()
    con.close()


def test_connect_compiles_the_declarations_again_only_when_what_they_are_made_from_changed(tmp_path):
    """connect() over this exact install compiles anonymized() again when a declaration, a declared table's
    columns or the privacy units changed since the last apply (a plain client may change any of them), and
    leaves it as it is otherwise: a marker written into anonymized() by a plain client survives a connect
    with nothing changed, and is gone after each kind of change."""
    path = str(tmp_path / "db.duckdb")
    duckdb_anon.connect(path).close()
    marker = "CREATE OR REPLACE MACRO anonymized(table_name) AS TABLE SELECT 'marker' AS m"

    def plain(*statements):
        con = duckdb.connect(path)
        for statement in statements:
            con.execute(statement)
        con.close()

    def compiled_again() -> bool:
        con = duckdb_anon.connect(path)
        try:
            return "marker" not in con.execute("SELECT macro_definition FROM duckdb_functions() "
                                               "WHERE function_name = 'anonymized'").fetchall()[0][0]
        finally:
            con.close()

    plain("CREATE TABLE p AS SELECT range AS id, range % 40 AS age FROM range(100)", marker)
    assert compiled_again()  # a new table
    plain(marker)
    assert not compiled_again()
    plain("INSERT INTO anon_column_roles (table_name, column_name, role) VALUES ('p', 'id', 'identifier'), "
          "('p', 'age', 'quasi_identifier')", "INSERT INTO anon_policies (table_name, k) VALUES ('p', 10)", marker)
    assert compiled_again()
    con = duckdb_anon.connect(path)
    assert con.execute("SELECT count(*), count(DISTINCT age) FROM anonymized('p')").fetchall()[0][0] == 100
    con.close()
    plain(marker)
    assert not compiled_again()
    plain("UPDATE anon_policies SET k = 20", marker)
    assert compiled_again()
    plain("ALTER TABLE p ADD COLUMN note VARCHAR", marker)
    assert compiled_again()
    con = duckdb_anon.connect(path)
    with pytest.raises(duckdb.Error, match="no declared role: note"):
        con.execute("SELECT * FROM anonymized('p')").fetchall()
    con.close()
    plain("INSERT INTO anon_privacy_units (table_name, unit_column) VALUES ('p', 'id')", marker)
    assert compiled_again()

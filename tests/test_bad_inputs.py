"""Every public function, given bad input, fails with an error naming the function and the argument.

BAD_INPUTS rows are (sql, function, name): running `sql` must raise a DuckDB error whose message holds
`function(): argument '` and `name` (the argument at fault or, for a wrong-shaped table, the column it
lacks). Each runs on a fresh connection holding the small tables of `tables` below.
"""
import subprocess
import sys

import duckdb
import pytest

import duckdb_anon

HIERARCHY_FILE = "zip.txt"  # written by the fixture: leaves '0', '1', '2'
EMPTY_FILE = "empty.txt"

BAD_INPUTS = [
    # hierarchies
    ("SELECT * FROM hierarchy_from_text('no_such_file.txt')", "hierarchy_from_text", "file_path"),
    (f"SELECT * FROM hierarchy_from_text('{EMPTY_FILE}')", "hierarchy_from_text", "file_path"),
    ("SELECT * FROM hierarchy_from_text(NULL)", "hierarchy_from_text", "file_path"),
    ("SELECT * FROM hierarchy_from_text(42)", "hierarchy_from_text", "file_path"),
    ("SELECT * FROM hierarchy_intervals('t', 'zip', [5, 10])", "hierarchy_intervals", "column_name"),
    ("SELECT * FROM hierarchy_intervals('t', 'nope', [5])", "hierarchy_intervals", "nope"),
    ("SELECT * FROM hierarchy_intervals('t', NULL, [5])", "hierarchy_intervals", "column_name"),
    ("SELECT * FROM hierarchy_intervals(NULL, 'age', [5])", "hierarchy_intervals", "table_name"),
    ("SELECT * FROM hierarchy_intervals('t', 'age', [5, 7])", "hierarchy_intervals", "widths"),
    ("SELECT * FROM hierarchy_intervals('t', 'age', [10, 5])", "hierarchy_intervals", "widths"),
    ("SELECT * FROM hierarchy_intervals('t', 'age', [0, 5])", "hierarchy_intervals", "widths"),
    ("SELECT * FROM hierarchy_intervals('t', 'age', [])", "hierarchy_intervals", "widths"),
    ("SELECT * FROM hierarchy_intervals('t', 'age', ['5'])", "hierarchy_intervals", "widths"),
    ("SELECT * FROM hierarchy_intervals('t', 'age', NULL)", "hierarchy_intervals", "widths"),
    ("SELECT * FROM hierarchy_dates('t', 'age')", "hierarchy_dates", "column_name"),
    ("SELECT * FROM hierarchy_dates('t', 'zip')", "hierarchy_dates", "column_name"),
    ("SELECT * FROM hierarchy_dates('t', 'nope')", "hierarchy_dates", "nope"),
    ("SELECT * FROM hierarchy_dates(NULL, 'seen')", "hierarchy_dates", "table_name"),
    # information loss
    ("SELECT * FROM equivalence_classes('rel', 'age')", "equivalence_classes", "qis"),
    ("SELECT * FROM equivalence_classes('rel', [])", "equivalence_classes", "qis"),
    ("SELECT * FROM equivalence_classes('rel', ['age', 'AGE'])", "equivalence_classes", "qis"),
    ("SELECT * FROM equivalence_classes('rel', ['age', NULL])", "equivalence_classes", "qis"),
    ("SELECT * FROM equivalence_classes('rel', ['nope'])", "equivalence_classes", "nope"),
    ("SELECT * FROM equivalence_classes('empty', ['nope'])", "equivalence_classes", "nope"),
    ("SELECT * FROM equivalence_classes(NULL, ['age'])", "equivalence_classes", "table_name"),
    ("SELECT * FROM release_measures('rel', ['age', 'zip'], k := 0)", "release_measures", "k"),
    ("SELECT * FROM release_measures('rel', ['age', 'zip'], k := 2.5)", "release_measures", "k"),
    ("SELECT * FROM release_measures('rel', ['age', 'zip'], k := 'x')", "release_measures", "k"),
    ("SELECT * FROM release_measures('rel', NULL)", "release_measures", "qis"),
    ("SELECT * FROM release_measures('rel', ['zip', 'nope'])", "release_measures", "nope"),
    ("SELECT * FROM ncp('rel', 't', ['age', 'zip'], 'nope')", "ncp", "nope"),
    ("SELECT * FROM ncp('rel', 't', ['age', 'zip'], NULL)", "ncp", "id_column"),
    ("SELECT * FROM ncp('rel', 't', 'age', 'id')", "ncp", "qis"),
    ("SELECT * FROM ncp('rel', 't', ['age', 'zip'], 'id', categorical_order := 'random')", "ncp", "categorical_order"),
    ("SELECT * FROM ncp(NULL, 't', ['age', 'zip'], 'id')", "ncp", "release_table"),
    ("SELECT * FROM ncp('rel', 't', ['age', 'zip'], 'id', hierarchies := {'zip': 'h_empty'})", "ncp", "hierarchies"),
    ("SELECT * FROM ncp('rel', 't', ['age', 'zip'], 'id', hierarchies := {'zip': 'h_no_path'})", "ncp", "path"),
    ("SELECT * FROM ncp('rel', 't', ['age', 'zip'], 'id', hierarchies := {'zip': 'h_text_path'})", "ncp", "hierarchies"),
    ("SELECT * FROM ncp('rel', 't', ['age', 'zip'], 'id', hierarchies := {'diag': 'h_zip'})", "ncp", "hierarchies"),
    ("SELECT * FROM ncp('rel', 't', ['age', 'zip'], 'id', hierarchies := 'h_zip')", "ncp", "hierarchies"),
    ("SELECT * FROM distortion('rel', 't', ['age'], 'id')", "distortion", "release_table"),
    ("SELECT * FROM distortion('t', 't', ['zip'], 'id')", "distortion", "zip"),
    ("SELECT * FROM distortion('rel_typed', 't', ['age'], 'nope')", "distortion", "nope"),
    ("SELECT * FROM distortion('rel_typed', 't', 'age', 'id')", "distortion", "columns"),
    ("SELECT * FROM distortion('rel_typed', 't', ['age'], 'id', guard := 0)", "distortion", "guard"),
    ("SELECT * FROM distortion('rel_typed', 't', ['age'], 'id', guard := 'x')", "distortion", "guard"),
    ("SELECT * FROM distortion('rel_typed', NULL, ['age'], 'id')", "distortion", "original_table"),
    # privacy models and risk
    ("SELECT * FROM class_profile('rel', ['age', 'zip'], c := -1)", "class_profile", "c"),
    ("SELECT * FROM class_profile('rel', ['age', 'zip'], sensitive := 'diag', c := NULL)", "class_profile", "c"),
    ("SELECT * FROM class_profile('rel', ['age', 'zip'], sensitive := 'AGE')", "class_profile", "sensitive"),
    ("SELECT * FROM class_profile('rel', ['age', 'zip'], sensitive := 'nope')", "class_profile", "nope"),
    ("SELECT * FROM class_profile('rel', ['age', 'zip'], sensitive := 1)", "class_profile", "sensitive"),
    ("SELECT * FROM class_profile('rel', ['zip', 'Zip'])", "class_profile", "qis"),
    ("SELECT * FROM class_profile('empty', ['nope'])", "class_profile", "nope"),
    ("SELECT * FROM privacy_measures('rel', ['age', 'zip'], sensitive := 'diag', c := 0)", "privacy_measures", "c"),
    ("SELECT * FROM privacy_measures('rel', ['age', 'zip'], sensitive := 'nope')", "privacy_measures", "nope"),
    ("SELECT * FROM privacy_measures('rel', 'age')", "privacy_measures", "qis"),
    ("SELECT * FROM risk_measures('rel', ['age', 'zip'], threshold := 2)", "risk_measures", "threshold"),
    ("SELECT * FROM risk_measures('rel', ['age', 'zip'], threshold := NULL)", "risk_measures", "threshold"),
    ("SELECT * FROM risk_measures('rel', ['age', 'zip'], population_table := 'ratings')", "risk_measures", "population_table"),
    ("SELECT * FROM risk_measures('rel', ['age', 'zip'], population_table := 1)", "risk_measures", "population_table"),
    ("SELECT * FROM risk_measures('rel', ['age', 'zip'], population_table := 'rel_typed')", "risk_measures", "population_table"),
    ("SELECT * FROM risk_measures('rel', ['nope'])", "risk_measures", "nope"),
    ("SELECT * FROM record_risks('rel', ['nope'])", "record_risks", "nope"),
    ("SELECT * FROM record_risks('rel', 'age')", "record_risks", "qis"),
    ("SELECT * FROM record_risks(NULL, ['age'])", "record_risks", "table_name"),
    # re-identification
    ("SELECT * FROM synthetic_ratings(-1)", "synthetic_ratings", "users"),
    ("SELECT * FROM synthetic_ratings(0)", "synthetic_ratings", "users"),
    ("SELECT * FROM synthetic_ratings(NULL)", "synthetic_ratings", "users"),
    ("SELECT * FROM synthetic_ratings(2.5)", "synthetic_ratings", "users"),
    ("SELECT * FROM synthetic_ratings(10, items := 0)", "synthetic_ratings", "items"),
    ("SELECT * FROM synthetic_ratings(10, ratings_per_user := 0)", "synthetic_ratings", "ratings_per_user"),
    ("SELECT * FROM synthetic_ratings(10, seed := 'x')", "synthetic_ratings", "seed"),
    ("SELECT * FROM realistic_ratings(0)", "realistic_ratings", "users"),
    ("SELECT * FROM realistic_ratings(NULL)", "realistic_ratings", "users"),
    ("SELECT * FROM realistic_ratings(2.5)", "realistic_ratings", "users"),
    ("SELECT * FROM realistic_ratings(10, items := 0)", "realistic_ratings", "items"),
    ("SELECT * FROM realistic_ratings(10, seed := 'x')", "realistic_ratings", "seed"),
    ("SELECT * FROM synthetic_aux('ratings', 0)", "synthetic_aux", "targets"),
    ("SELECT * FROM synthetic_aux('ratings', 5, known_items := 0)", "synthetic_aux", "known_items"),
    ("SELECT * FROM synthetic_aux('ratings', 5, value_noise := -1)", "synthetic_aux", "value_noise"),
    ("SELECT * FROM synthetic_aux('ratings', 5, days_noise := -1)", "synthetic_aux", "days_noise"),
    ("SELECT * FROM synthetic_aux('ratings', 5, with_dates := 'yes')", "synthetic_aux", "with_dates"),
    ("SELECT * FROM synthetic_aux('ratings', 5, seed := NULL)", "synthetic_aux", "seed"),
    ("SELECT * FROM synthetic_aux('t', 5)", "synthetic_aux", "record_id"),
    ("SELECT * FROM deanonymize('ratings', 'aux', rho0 := 0)", "deanonymize", "rho0"),
    ("SELECT * FROM deanonymize('ratings', 'aux', rho0 := -1)", "deanonymize", "rho0"),
    ("SELECT * FROM deanonymize('ratings', 'aux', d0 := NULL)", "deanonymize", "d0"),
    ("SELECT * FROM deanonymize('ratings', 'aux', d0 := 0)", "deanonymize", "d0"),
    ("SELECT * FROM deanonymize('ratings', 'aux', phi := 'x')", "deanonymize", "phi"),
    ("SELECT * FROM deanonymize('ratings', 'aux', phi := -1)", "deanonymize", "phi"),
    ("SELECT * FROM deanonymize('ratings', 'aux', use_dates := 1)", "deanonymize", "use_dates"),
    ("SELECT * FROM deanonymize('ratings', NULL)", "deanonymize", "aux_table"),
    ("SELECT * FROM deanonymize('ratings', 't')", "deanonymize", "target_id"),
    ("SELECT * FROM deanonymize('t', 'aux')", "deanonymize", "record_id"),
    ("SELECT * FROM deanonymize('ratings', 'aux_text_value')", "deanonymize", "aux_table"),
    ("SELECT * FROM deanonymize_evaluate('ratings', 'aux', 'truth', rho0 := 0)", "deanonymize_evaluate", "rho0"),
    ("SELECT * FROM deanonymize_evaluate('ratings', 'aux', 'truth', phi := NULL)", "deanonymize_evaluate", "phi"),
    ("SELECT * FROM deanonymize_evaluate('ratings', 'aux', NULL)", "deanonymize_evaluate", "truth_table"),
    ("SELECT * FROM deanonymize_evaluate('ratings', 'aux', 't')", "deanonymize_evaluate", "target_id"),
    ("SELECT * FROM linkage_nearest('t', 't', 'age', 'id')", "linkage_nearest", "qis"),
    ("SELECT * FROM linkage_nearest('t', 't', ['age'], NULL)", "linkage_nearest", "id_column"),
    ("SELECT * FROM linkage_nearest('t', 't', ['age'], 'AGE')", "linkage_nearest", "id_column"),
    ("SELECT * FROM linkage_nearest('t', 't', ['age', 'nope'], 'id')", "linkage_nearest", "nope"),
    ("SELECT * FROM linkage_nearest(NULL, 't', ['age'], 'id')", "linkage_nearest", "release_table"),
    ("SELECT * FROM linkage_classes('rel', 't', 'age', 'id')", "linkage_classes", "qis"),
    ("SELECT * FROM linkage_classes('rel', 't', ['age'], 1)", "linkage_classes", "id_column"),
    ("SELECT * FROM linkage_classes('rel', 't', ['age', 'nope'], 'id')", "linkage_classes", "nope"),
    ("SELECT * FROM linkage_classes('rel', 't', ['age', 'zip'], 'id', hierarchies := {'zip': 'h_empty'})",
     "linkage_classes", "hierarchies"),
    # Mondrian
    ("SELECT * FROM mondrian('t', ['age'], 0)", "mondrian", "k"),
    ("SELECT * FROM mondrian('t', 'age', 5)", "mondrian", "qis"),
    ("SELECT * FROM mondrian('t', ['age'], 5, mode := 'loose')", "mondrian", "mode"),
    ("SELECT * FROM mondrian('t', ['age'], 5, output := 'json')", "mondrian", "output"),
    ("SELECT * FROM mondrian('t', ['age'], 5, sensitive := 'diag')", "mondrian", "sensitive"),
    ("SELECT * FROM mondrian('t', ['age'], 5, max_suppression := 1)", "mondrian", "max_suppression"),
    ("SELECT * FROM mondrian('t', ['zip'], 5, hierarchies := {'zip': 'h_empty'})", "mondrian", "hierarchies"),
    ("SELECT * FROM mondrian_classes('t', ['age'], NULL)", "mondrian_classes", "k"),
    ("SELECT * FROM mondrian_classes('t', [], 5)", "mondrian_classes", "qis"),
    ("SELECT * FROM mondrian('t', [1], 5)", "mondrian", "qis"),
    # declared roles and releases
    ("SELECT * FROM anonymized('nope')", "anonymized", "table_name"),
    ("SELECT * FROM anonymized(NULL)", "anonymized", "table_name"),
    ("SELECT * FROM suggest_roles(NULL)", "suggest_roles", "table_name"),
    ("SELECT * FROM suggest_roles(42)", "suggest_roles", "table_name"),
    ("SELECT suggest_roles_sql(NULL)", "suggest_roles", "table_name"),
    ("SELECT * FROM release_differencing('rel', 'rel', [], 'id')", "release_differencing", "qis"),
    ("SELECT * FROM release_differencing('rel', 'rel', ['age'], NULL)", "release_differencing", "id_column"),
    ("SELECT * FROM release_differencing('rel', 'rel', ['age'], 'id', k := 0)", "release_differencing", "k"),
    ("SELECT * FROM release_differencing(NULL, 'rel', ['age'], 'id')", "release_differencing", "release_a"),
    ("SELECT * FROM release_differencing('rel', 'dup', ['age'], 'id')", "release_differencing", "id_column"),
    # differential privacy
    ("SELECT * FROM dp_aggregate('t', ['zip'], epsilon := 0, delta := 1e-6, max_groups_contributed := 1, privacy_unit_column := 'id')",
     "dp_aggregate", "epsilon"),
    ("SELECT * FROM dp_bounded_aggregates('t', ['zip'], max_groups_contributed := 0, privacy_unit_column := 'id')",
     "dp_bounded_aggregates", "max_groups_contributed"),
    ("SELECT * FROM privacy_unit_rows('t')", "privacy_unit_rows", "table_name"),
    # multi-table releases
    ("SELECT * FROM table_release_join_check('t', 'rel', 'nope', 'id')", "table_release_join_check", "person_column"),
    ("SELECT * FROM table_release_join_check('t', 'rel', 'id', 'nope')", "table_release_join_check", "events_person_column"),
]

# Public functions that take no argument.
NO_ARGUMENTS = ["duckdb_anon_version", "duckdb_anon_install_stamp"]


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    """A database file holding the small tables every row reads, and the connection that installed
    duckdb-anon into it (each test opens a fresh connection to it: a cursor, with its own session state)."""
    folder = tmp_path_factory.mktemp("bad_inputs")
    path = str(folder / "tables.duckdb")
    con = duckdb_anon.connect(path)
    con.execute("""CREATE TABLE t AS SELECT range AS id, 20 + range % 9 AS age, (range % 3)::VARCHAR AS zip,
                   ['x', 'y', 'z'][range % 3 + 1] AS diag, DATE '2020-01-01' + range::INTEGER AS seen,
                   range * 1.5 AS f FROM range(30)""")
    con.execute("CREATE TABLE empty AS SELECT * FROM t LIMIT 0")
    con.execute("CREATE TABLE rel AS SELECT * FROM mondrian('t', ['age', 'zip'], 3)")
    con.execute("CREATE TABLE rel_typed AS SELECT * FROM mondrian('t', ['age', 'zip'], 3, output := 'typed')")
    con.execute("CREATE TABLE dup AS SELECT * FROM rel UNION ALL SELECT * FROM rel LIMIT 40")
    con.execute("CREATE TABLE h_zip AS SELECT leaf, [leaf, '*'] AS path FROM (VALUES ('0'), ('1'), ('2')) v(leaf)")
    con.execute("CREATE TABLE h_empty AS SELECT * FROM h_zip LIMIT 0")
    con.execute("CREATE TABLE h_no_path AS SELECT leaf FROM h_zip")
    con.execute("CREATE TABLE h_text_path AS SELECT leaf, leaf || ';*' AS path FROM h_zip")
    con.execute("CREATE TABLE ratings AS SELECT * FROM synthetic_ratings(30, items := 20, ratings_per_user := 5)")
    con.execute("CREATE TABLE aux AS SELECT * FROM synthetic_aux('ratings', 5, known_items := 3)")
    con.execute("CREATE TABLE aux_text_value AS SELECT target_id, item, value::VARCHAR || ' stars' AS value, ts FROM aux")
    con.execute("CREATE TABLE truth AS SELECT DISTINCT target_id, target_id AS record_id FROM aux")
    (folder / HIERARCHY_FILE).write_text("0;*\n1;*\n2;*\n")
    (folder / EMPTY_FILE).write_text("")
    yield folder, con
    con.close()


@pytest.fixture
def fresh(database, monkeypatch):
    folder, installed = database
    monkeypatch.chdir(folder)  # the hierarchy files are named relative to it
    connection = installed.cursor()  # a new connection to the same database: installing once is enough
    yield connection
    connection.close()


@pytest.mark.parametrize("sql, function, name", BAD_INPUTS)
def test_bad_input_is_named(fresh, sql, function, name):
    with pytest.raises(duckdb.Error) as err:
        fresh.execute(sql).fetchall()
    message = str(err.value)
    assert f"{function}(): argument '" in message, message
    assert name in message, message


def test_the_fixture_tables_are_good_input(fresh):
    """The rows fail because of the one bad part: the same calls with good arguments run and return rows."""
    good = [
        f"SELECT * FROM hierarchy_from_text('{HIERARCHY_FILE}')",
        "SELECT * FROM hierarchy_intervals('t', 'age', [5, 10])",
        "SELECT * FROM hierarchy_dates('t', 'seen')",
        "SELECT * FROM equivalence_classes('rel', ['AGE', 'Zip'])",
        "SELECT * FROM release_measures('rel', ['age', 'zip'], k := 3)",
        "SELECT * FROM ncp('rel', 't', ['age', 'zip'], 'ID', hierarchies := {'zip': 'h_zip'})",
        "SELECT * FROM distortion('rel_typed', 't', ['age'], 'id', guard := 1)",
        "SELECT * FROM class_profile('rel', ['age', 'zip'], sensitive := 'DIAG', c := 1)",
        "SELECT * FROM privacy_measures('rel', ['age', 'zip'], sensitive := 'diag')",
        "SELECT * FROM risk_measures('rel', ['age', 'zip'], population_table := 'rel', threshold := 1)",
        "SELECT * FROM record_risks('rel', ['age', 'zip'])",
        "SELECT * FROM synthetic_ratings(10, items := 5, ratings_per_user := 1, seed := 3)",
        "SELECT * FROM synthetic_aux('ratings', 5, known_items := 1, value_noise := 0, days_noise := 0, with_dates := false)",
        "SELECT * FROM deanonymize('ratings', 'aux', rho0 := 0.5, d0 := 1, phi := 0, use_dates := false)",
        "SELECT * FROM deanonymize_evaluate('ratings', 'aux', 'truth')",
        "SELECT * FROM linkage_nearest('rel', 't', ['age', 'zip'], 'ID')",
        "SELECT * FROM linkage_classes('rel', 't', ['age', 'zip'], 'id', hierarchies := {'zip': 'h_zip'})",
    ]
    for sql in good:
        assert len(fresh.execute(sql).fetchall()) > 0, sql


def test_every_public_function_has_a_row(fresh):
    public = {name for (name,) in fresh.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type LIKE '%macro%' "
        "AND NOT starts_with(function_name, 'anon_') AND NOT internal").fetchall()}
    from tests.test_walk_bad_inputs import BAD_INPUTS as PATTERN_BAD_INPUTS  # the same table, on its own fixture
    covered = {function for _, function, _ in BAD_INPUTS} | {"suggest_roles_sql"}  # it names suggest_roles()
    covered |= {words[0].removesuffix("()") for _, words in PATTERN_BAD_INPUTS}
    from tests.km.test_bad_inputs import SQL_BAD_INPUTS as KM_BAD_INPUTS  # the k^m functions, on their own fixture
    covered |= {function for _, function, _ in KM_BAD_INPUTS}
    missing = public - covered - set(NO_ARGUMENTS)
    assert not missing, f"public functions without a bad-input row: {sorted(missing)}"


# A table name DuckDB's parser cannot read (a double quote inside an unquoted name), a column the table
# lacks, a table of the wrong shape: (sql, function, argument) -- the error must name `function(): argument
# 'argument'`, whatever the function and wherever the argument sits.
ODD = "'we\"ird'"
NAMED = [(f"SELECT * FROM {call}", function, argument) for call, function, argument in [
    (f"hierarchy_intervals({ODD}, 'age', [5])", "hierarchy_intervals", "table_name"),
    (f"hierarchy_dates({ODD}, 'seen')", "hierarchy_dates", "table_name"),
    (f"equivalence_classes({ODD}, ['age'])", "equivalence_classes", "table_name"),
    (f"release_measures({ODD}, ['age'])", "release_measures", "table_name"),
    (f"ncp({ODD}, 't', ['age'], 'id')", "ncp", "release_table"),
    (f"ncp('rel', {ODD}, ['age'], 'id')", "ncp", "original_table"),
    (f"ncp('rel', 't', ['zip'], 'id', hierarchies := {{'zip': {ODD}}})", "ncp", "hierarchies"),
    (f"distortion('rel_typed', {ODD}, ['age'], 'id')", "distortion", "original_table"),
    (f"class_profile({ODD}, ['age'])", "class_profile", "table_name"),
    (f"privacy_measures({ODD}, ['age'], sensitive := 'diag')", "privacy_measures", "table_name"),
    (f"risk_measures('rel', ['age'], population_table := {ODD})", "risk_measures", "population_table"),
    (f"record_risks({ODD}, ['age'])", "record_risks", "table_name"),
    (f"linkage_classes({ODD}, 't', ['age'], 'id')", "linkage_classes", "release_table"),
    (f"linkage_classes('rel', {ODD}, ['age'], 'id')", "linkage_classes", "aux_table"),
    (f"linkage_classes('rel', 't', ['zip'], 'id', hierarchies := {{'zip': {ODD}}})", "linkage_classes", "hierarchies"),
    (f"linkage_nearest('rel', {ODD}, ['age'], 'id')", "linkage_nearest", "aux_table"),
    (f"linkage_rank('rel_typed', {ODD}, ['age'], 'id')", "linkage_rank", "original_table"),
    (f"linkage_pattern('t', {ODD}, 'age', 'id')", "linkage_pattern", "original_table"),
    (f"deanonymize('ratings', {ODD})", "deanonymize", "aux_table"),
    (f"deanonymize_evaluate('ratings', 'aux', {ODD})", "deanonymize_evaluate", "truth_table"),
    (f"synthetic_aux({ODD}, 5)", "synthetic_aux", "table_name"),
    (f"localities({ODD}, 'age', 5)", "localities", "table_name"),
    (f"check_localities('t', 'age', {ODD})", "check_localities", "locality_table"),
    (f"random_walk({ODD}, 'age', 'loc')", "random_walk", "table_name"),
    (f"random_walk('t', 'age', {ODD})", "random_walk", "locality_table"),
    (f"suggest_roles({ODD})", "suggest_roles", "table_name"),
    (f"release_differencing('rel', {ODD}, ['age'], 'id')", "release_differencing", "release_b"),
    (f"dp_aggregate({ODD}, ['zip'], epsilon := 1, delta := 1e-6, max_groups_contributed := 1, privacy_unit_column := 'id')",
     "dp_aggregate", "table_name"),
    (f"mondrian({ODD}, ['age'], 5)", "mondrian", "table_name"),
    (f"mondrian_classes({ODD}, ['age'], 5)", "mondrian_classes", "table_name"),
    (f"mondrian('t', ['zip'], 5, hierarchies := {{'zip': {ODD}}})", "mondrian", "hierarchies"),
    # a column the table lacks
    ("mondrian('t', ['age', 'nope'], 5)", "mondrian", "qis"),
    ("mondrian('t', ['age'], 5, sensitive := 'nope', l := 2)", "mondrian", "sensitive"),
    ("mondrian_classes('t', ['nope'], 5)", "mondrian_classes", "qis"),
    ("ncp('rel', 't', ['age'], 'nope')", "ncp", "original_table"),
    # both releases lack the column: DuckDB runs the two checks in no fixed order, and either names a culprit
    ("release_differencing('rel', 'rel', ['nope'], 'id')", "release_differencing", ("release_a", "release_b")),
    ("release_differencing('rel', 't', ['age'], 'nope')", "release_differencing", ("release_a", "release_b")),
    ("privacy_measures('rel', ['age'], sensitive := 'nope')", "privacy_measures", "sensitive"),
    # a table of the wrong shape
    ("random_walk('t', 'age', 't')", "random_walk", "locality_table"),
    ("deanonymize('ratings', 'ratings')", "deanonymize", "aux_table"),
]]


def test_every_error_names_the_function_and_the_argument(fresh):
    """All rows on one connection; every mismatch is reported at once."""
    fresh.execute("CREATE TEMP TABLE loc AS SELECT * FROM localities('t', 'age', 5)")
    wrong = []
    for sql, function, argument in NAMED:
        try:
            fresh.execute(sql).fetchall()
            wrong.append(f"{sql}: no error")
        except duckdb.Error as err:
            named = argument if isinstance(argument, tuple) else (argument,)
            if not any(f"{function}(): argument '{one}'" in str(err) for one in named):
                wrong.append(f"{sql}: {str(err).splitlines()[0]}")
    assert not wrong, "\n".join(wrong)


# A reserved column name (anon_reserved_name in sql/03_arguments.sql: '__anon_' in any case) given to any
# argument that takes column names: (call with {N} for the name, function, argument). Each row runs with
# '__anon_x' and '__ANON_X'; the error must name the function, the argument and say the name is reserved.
RESERVED = [
    ("equivalence_classes('rel', [{N}])", "equivalence_classes", "qis"),
    ("release_measures('rel', ['age', {N}])", "release_measures", "qis"),
    ("ncp('rel', 't', [{N}], 'id')", "ncp", "qis"),
    ("ncp('rel', 't', ['age'], {N})", "ncp", "id_column"),
    ("distortion('rel_typed', 't', [{N}], 'id')", "distortion", "columns"),
    ("distortion('rel_typed', 't', ['age'], {N})", "distortion", "id_column"),
    ("class_profile('rel', [{N}])", "class_profile", "qis"),
    ("class_profile('rel', ['age'], sensitive := {N})", "class_profile", "sensitive"),
    ("privacy_measures('rel', ['age'], sensitive := {N})", "privacy_measures", "sensitive"),
    ("risk_measures('rel', [{N}])", "risk_measures", "qis"),
    ("record_risks('rel', [{N}])", "record_risks", "qis"),
    ("linkage_nearest('rel', 't', [{N}], 'id')", "linkage_nearest", "qis"),
    ("linkage_nearest('rel', 't', ['age'], {N})", "linkage_nearest", "id_column"),
    ("linkage_classes('rel', 't', [{N}], 'id')", "linkage_classes", "qis"),
    ("linkage_classes('rel', 't', ['age'], {N})", "linkage_classes", "id_column"),
    ("linkage_rank('rel_typed', 't', [{N}], 'id')", "linkage_rank", "columns"),
    ("linkage_rank('rel_typed', 't', ['age'], {N})", "linkage_rank", "id_column"),
    ("linkage_pattern('t', 't', {N}, 'id')", "linkage_pattern", "column_name"),
    ("linkage_pattern('t', 't', 'age', {N})", "linkage_pattern", "id_column"),
    ("localities('t', {N}, 5)", "localities", "column_name"),
    ("localities('t', 'age', 5, group_by := {N})", "localities", "group_by"),
    ("check_localities('t', {N}, 'loc')", "check_localities", "column_name"),
    ("random_walk('t', {N}, 'loc')", "random_walk", "column_name"),
    ("random_walk('t', 'age', 'loc', group_by := {N})", "random_walk", "group_by"),
    ("mondrian('t', [{N}], 5)", "mondrian", "qis"),
    ("mondrian('t', ['age'], 5, sensitive := {N}, l := 2)", "mondrian", "sensitive"),
    ("mondrian('t', ['age'], 5, keep := [{N}])", "mondrian", "keep"),
    ("mondrian_classes('t', [{N}], 5)", "mondrian_classes", "qis"),
    ("mondrian_classes('t', ['age'], 5, sensitive := {N}, l := 2)", "mondrian_classes", "sensitive"),
    ("hierarchy_intervals('t', {N}, [5])", "hierarchy_intervals", "column_name"),
    ("hierarchy_dates('t', {N})", "hierarchy_dates", "column_name"),
    ("dp_aggregate('t', [{N}], epsilon := 1, delta := 1e-6, max_groups_contributed := 1, privacy_unit_column := 'id')",
     "dp_aggregate", "group_by"),
    ("dp_aggregate('t', ['zip'], epsilon := 1, delta := 1e-6, max_groups_contributed := 1, privacy_unit_column := {N})",
     "dp_aggregate", "privacy_unit_column"),
    ("dp_bounded_aggregates('t', [{N}], max_groups_contributed := 1, privacy_unit_column := 'id')", "dp_bounded_aggregates",
     "group_by"),
    ("km_check('ev', 'person', [{N}], 2, 1)", "km_check", "items"),
    ("km_check('ev', {N}, ['item'], 2, 1)", "km_check", "person"),
    ("km_measures('ev', 'ev', [{N}])", "km_measures", "items"),
    ("km_anonymity('ev', [{N}], 2, 1, 'person', person_output := 'drop')", "km_anonymity", "items"),
    ("km_anonymity('ev', ['item'], 2, 1, {N}, person_output := 'drop')", "km_anonymity", "person"),
    ("table_release_join_check('t', 'rel', {N}, 'id')", "table_release_join_check", "person_column"),
    ("table_release_join_check('t', 'rel', 'id', {N})", "table_release_join_check", "events_person_column"),
    ("release_differencing('rel', 'rel', [{N}], 'id')", "release_differencing", "qis"),
    ("release_differencing('rel', 'rel', ['age'], {N})", "release_differencing", "id_column"),
]


def test_a_reserved_column_name_is_refused_in_any_case(fresh):
    """All rows on one connection, both spellings; every mismatch is reported at once."""
    fresh.execute("CREATE TEMP TABLE loc AS SELECT * FROM localities('t', 'age', 5)")
    fresh.execute("CREATE TEMP TABLE ev AS SELECT id AS person, 'i' || (id % 4) AS item FROM t")
    wrong = []
    for call, function, argument in RESERVED:
        for name in ("__anon_x", "__ANON_X"):
            sql = "SELECT * FROM " + call.replace("{N}", f"'{name}'")
            try:
                fresh.execute(sql).fetchall()
                wrong.append(f"{sql}: no error")
            except duckdb.Error as err:
                message, named = str(err), argument if isinstance(argument, tuple) else (argument,)
                if not any(f"{function}(): argument '{one}'" in message for one in named) or "reserved" not in message:
                    wrong.append(f"{sql}: {message.splitlines()[0]}")
    assert not wrong, "\n".join(wrong)
    # the good spelling of each row runs: the refusals are the name's doing
    for row, good in [(0, "'age'"), (1, "'zip'"), (14, "'id'"), (19, "'age'"), (20, "'zip'"), (24, "'zip'")]:
        call = RESERVED[row][0].replace("{N}", good)
        assert fresh.execute(f"SELECT count(*) FROM {call}").fetchall()[0][0] > 0, call


def test_spark_mondrian_runs_the_same_reserved_name_rule():
    """spark.mondrian checks its QIs outside any database with mondrian()'s own SQL checks, and Python
    publishers with errors.check_not_reserved, both running anon_reserved_name: no JVM is needed to see
    them refuse both spellings and take the rest."""
    from duckdb_anon.errors import check_not_reserved
    from duckdb_anon.mondrian import spark

    names = ["__anon_x", "__ANON_X", "__Anon_", "_anon_x", "x__anon_", "anon_x", "__anon", "age"]
    for name in names:
        reserved = name.lower().startswith("__anon_")  # the rule, restated here only to test it
        for check in (lambda: spark.check_arguments([name], 5, "strict", "text", "appearance", "actual", None),
                      lambda: check_not_reserved("f", "qis", ["age2", name])):
            if reserved:
                with pytest.raises(ValueError, match=r"\(\): argument 'qis' holds (NULL or )?a reserved __anon_ name"):
                    check()
            else:
                check()


def test_a_table_holding_a_reserved_column_is_refused_by_the_locality_functions(fresh):
    """random_walk() names its own helper columns __anon_...: a source column so named, in any case, would
    be left out of the release (it came back all NULL), so the table is refused, naming it; through a view
    that renames the columns every column comes back with its values."""
    fresh.execute("CREATE TEMP TABLE odd AS SELECT id, age, id * 2 AS __anon_x, id * 3 AS \"__ANON_Y\" FROM t")
    fresh.execute("CREATE TEMP TABLE loc_odd AS SELECT * FROM localities('t', 'age', 5)")
    for call, function in [("random_walk('odd', 'age', 'loc_odd')", "random_walk"), ("localities('odd', 'age', 5)", "localities"),
                           ("check_localities('odd', 'age', 'loc_odd')", "check_localities")]:
        with pytest.raises(duckdb.Error, match=rf"{function}\(\): argument 'table_name' .*reserved.*__anon_x, __ANON_Y"):
            fresh.execute(f"SELECT * FROM {call}").fetchall()
    fresh.execute('CREATE TEMP VIEW renamed AS SELECT id, age, __anon_x AS x2, "__ANON_Y" AS y3 FROM odd')
    walked = fresh.execute("SELECT id, x2, y3 FROM random_walk('renamed', 'age', 'loc_odd') ORDER BY id").fetchall()
    assert walked == fresh.execute("SELECT id, id * 2, id * 3 FROM t ORDER BY id").fetchall()


PLAIN_CLIENT = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])  # never imports duckdb_anon
out = []
for sql in ["SELECT * FROM mondrian('t', ['age', 'nope'], 5)", "SELECT * FROM release_measures('we\\"ird', ['age'])",
            "SELECT * FROM random_walk('t', 'age', 'loc')"]:
    if 'random_walk' in sql:  # what a client that is not Python (the duckdb shell, JDBC, ...) is told
        con.execute("CREATE TEMP MACRO anon_needs_python(fn) AS anon_python_api_ok(fn, 'cli')")
    try:
        con.execute(sql).fetchall()
        out.append('no error')
    except duckdb.Error as err:
        out.append(str(err).splitlines()[0])
print('\\n'.join(out))
"""


def test_a_plain_client_is_told_the_function_and_the_argument(tmp_path):
    """From a process that never imports duckdb_anon: the SQL macros alone name the function and the
    argument, and random_walk() says it needs the Python package instead of naming its internal kernel."""
    path = str(tmp_path / "plain.duckdb")
    con = duckdb_anon.connect(path)
    con.execute("CREATE TABLE t AS SELECT range AS id, 20 + range % 9 AS age FROM range(30)")
    con.execute("CREATE TABLE loc AS SELECT * FROM localities('t', 'age', 5)")
    con.close()
    lines = subprocess.run([sys.executable, "-c", PLAIN_CLIENT, path], capture_output=True, text=True, check=True,
                           timeout=120).stdout.splitlines()
    assert "mondrian(): argument 'qis'" in lines[0] and "'nope'" in lines[0], lines
    assert "release_measures(): argument 'table_name'" in lines[1], lines
    assert "random_walk() needs the duckdb_anon Python package" in lines[2] and "anon_random_walk" not in lines[2], lines

"""Run a .sql script against a fresh in-memory database with duckdb-anon and the Adult data loaded,
printing each query's result."""
import sys

import duckdb_anon


def main(path: str) -> None:
    con = duckdb_anon.connect()
    duckdb_anon.load_adult(con, "adult")
    script = open(path, encoding="utf-8").read()
    for statement in con.extract_statements(script):
        result = con.execute(statement.query)
        if result.description:
            print(" | ".join(d[0] for d in result.description))
            for row in result.fetchall():
                print(" | ".join(str(v) for v in row))
            print()
    con.close()


if __name__ == "__main__":
    main(sys.argv[1])

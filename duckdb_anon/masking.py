"""The fake value pools of the masking functions (``sql/69_masking.sql``), loaded once from Faker.

The masking functions pick fake names, e-mail domains, phones, addresses and companies in SQL, by the keyed
digest of the person, from lists stored in the table ``anon_fake_values``. This module fills that table:
first and last names are Faker's own lists for the locale; phones, addresses and companies, which Faker
builds from formats, are a fixed pool of values generated once with a seeded Faker. Loading is explicit (or
done by :func:`duckdb_anon.masked_copy` when a pool is missing) rather than part of ``install()``, so that
``connect()`` stays as fast as it was: Faker is imported only here.

The pools live in the database, so the same database gives the same fake values even after Faker is
upgraded; loading again (``replace=True``) may change them.
"""
from __future__ import annotations

import importlib

import duckdb

LOCALES = ("en_US", "fr_FR")  # what load_fake_values() loads by default; any Faker locale with a person provider works
POOL_SIZE = 1000  # generated phones, addresses and companies per locale (before removing repeats)
POOL_SEED = 0
KINDS = ("first_name", "last_name", "email_domain", "phone", "address", "company")


class MaskingError(ValueError):
    """Fake values that cannot be loaded; the message names the function and the argument."""


def _faker():
    try:
        import faker
    except ImportError:  # a runtime dependency; a broken environment gets a clear message
        raise MaskingError("load_fake_values(): the fake value lists come from Faker: pip install faker") from None
    return faker


def _unique(values) -> list[str]:
    """The values in first-seen order, each once, as text on one line."""
    return list(dict.fromkeys(" ".join(str(v).split()) for v in values if str(v).strip()))


def fake_pools(locale: str) -> dict[str, list[str]]:
    """The pools of one locale, kind -> values. Names are Faker's lists; the rest a seeded, fixed pool."""
    faker = _faker()
    try:
        person = importlib.import_module(f"faker.providers.person.{locale}").Provider
        generator = faker.Faker(locale)
    except (ImportError, AttributeError):
        raise MaskingError(f"load_fake_values(): argument 'locales': Faker has no locale {locale!r} "
                           f"(for example {', '.join(LOCALES)})") from None
    generator.seed_instance(POOL_SEED)
    domains = getattr(generator.provider("faker.providers.internet"), "free_email_domains", None) or ["example.com"]
    first = person.first_names if hasattr(person, "first_names") else (
        tuple(person.first_names_male) + tuple(person.first_names_female))
    return {
        "first_name": _unique(first),
        "last_name": _unique(person.last_names),
        "email_domain": _unique(domains),
        "phone": _unique(generator.phone_number() for _ in range(POOL_SIZE)),
        "address": _unique(generator.address().replace("\n", ", ") for _ in range(POOL_SIZE)),
        "company": _unique(generator.company() for _ in range(POOL_SIZE)),
    }


def load_fake_values(con: duckdb.DuckDBPyConnection, locales=LOCALES, *, replace: bool = False) -> list[str]:
    """Store the fake value pools of `locales` in ``anon_fake_values`` (once: a locale already there is kept
    unless `replace`); returns the locales written."""
    if isinstance(locales, str) or not all(isinstance(loc, str) and loc for loc in locales):
        raise MaskingError("load_fake_values(): argument 'locales' must be a list of Faker locale names, e.g. ['en_US']")
    present = {row[0] for row in con.execute("SELECT DISTINCT pool_locale FROM anon_fake_values").fetchall()}
    wanted = [loc for loc in dict.fromkeys(locales) if replace or loc not in present]
    if not wanted:
        return []
    source = f"faker {_faker().VERSION}"
    rows = [(loc, kind, values, source) for loc in wanted for kind, values in fake_pools(loc).items()]
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM anon_fake_values WHERE list_contains(?, pool_locale)", [wanted])
        con.executemany("INSERT INTO anon_fake_values (pool_locale, pool_kind, pool, source) VALUES (?, ?, ?, ?)", rows)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return wanted

-- Pseudonym keys and keyed pseudonyms. Pure SQL: the key rule lives here once, for set_pseudonym_key()
-- (Python), `duckdb-anon new-key` and every read of a release that pseudonymizes (any client).
--
-- Why a self-checking format: a rule on a key's length and alphabet cannot tell a random key from a typed
-- one ('0123456789abcdef0123456789abcdef' has 32 hex digits and 16 different ones), and a typed key makes
-- every pseudonym reversible by enumerating the ids. A key is therefore accepted only in the format the
-- generator writes: 'anon-key-v1-', 64 lower-case hex digits (256 random bits) from the operating system's
-- secure generator, '-', and 8 hex digits of checksum, the start of SHA-256('anon-key-v1-' || random part).
-- A typed, truncated or guessed key fails the checksum. The checksum is no secret: it guards against
-- accidents, not against someone who computes it for a key they chose; the sanity checks below only catch
-- random parts that are obviously not random.

-- The checksum of a key's random part (8 hex digits).
CREATE OR REPLACE MACRO anon_key_checksum(random_part) AS left(sha256('anon-key-v1-' || random_part), 8);

-- A key in the generator's format around a random part (64 hex digits): what new_pseudonym_key() returns.
CREATE OR REPLACE MACRO anon_key_format(random_part) AS
    'anon-key-v1-' || random_part || '-' || anon_key_checksum(random_part);

-- What is wrong with a pseudonym key, or NULL when it is in the generator's format, its checksum holds and
-- its random part looks random: 10 or more different hex digits and 32 or more different pairs of adjacent
-- digits (64 random digits have 16 and about 56; a repeated or counted pattern has far fewer).
CREATE OR REPLACE MACRO anon_key_problem(key) AS
    CASE WHEN key IS NULL THEN 'is not set'
         WHEN NOT regexp_full_match(key, 'anon-key-v1-[0-9a-f]{64}-[0-9a-f]{8}')
              THEN 'is not a key from the key generator (''anon-key-v1-'', 64 hex digits, ''-'', 8 hex digits): '
                   || 'make one with duckdb_anon.new_pseudonym_key() or duckdb-anon new-key'
         WHEN anon_key_checksum(substr(key, 13, 64)) <> right(key, 8)
              THEN 'fails its checksum (mistyped, truncated or not made by the key generator): '
                   || 'make one with duckdb_anon.new_pseudonym_key() or duckdb-anon new-key'
         WHEN len(list_distinct(string_split(substr(key, 13, 64), ''))) < 10
              OR len(list_distinct(list_transform(range(13, 76), lambda i: substr(key, i, 2)))) < 32
              THEN 'has a random part that is not random (too few different digits or pairs of digits): '
                   || 'make one with duckdb_anon.new_pseudonym_key() or duckdb-anon new-key'
    END;

-- The keyed digest behind every pseudonym (HMAC-style: SHA-256 of the secret and the SHA-256 of the secret
-- and the text), 32 hex digits.
CREATE OR REPLACE MACRO anon_keyed_digest(secret, text) AS left(sha256(secret || sha256(secret || text)), 32);

-- The pseudonym key named key_name, read from its session variable, or an error naming fn when it is not set
-- or anon_key_problem() objects to it.
CREATE OR REPLACE MACRO anon_checked_key(key_name, fn) AS
    CASE WHEN getvariable('duckdb_anon_key_' || key_name) IS NULL
         THEN error(fn || '(): no pseudonym key in this session: SET VARIABLE duckdb_anon_key_' || key_name
                    || ' = ''<secret>'' (or duckdb_anon.set_pseudonym_key) first')
         WHEN anon_key_problem(getvariable('duckdb_anon_key_' || key_name)::VARCHAR) IS NOT NULL
         THEN error(fn || '(): the pseudonym key duckdb_anon_key_' || key_name || ' '
                    || anon_key_problem(getvariable('duckdb_anon_key_' || key_name)::VARCHAR))
         ELSE getvariable('duckdb_anon_key_' || key_name)::VARCHAR END;

-- Keyed pseudonym, 32 hex digits. The key lives in a session variable, SET VARIABLE duckdb_anon_key_<key_name>
-- = '...', so it is never written to the database file; a key anon_key_problem() objects to is refused on
-- every read. Same key and value give the same pseudonym in every table.
CREATE OR REPLACE MACRO anon_pseudonym(value, key_name) AS
    CASE WHEN value IS NULL THEN NULL ELSE anon_keyed_digest(anon_checked_key(key_name, 'anonymized'), value::VARCHAR) END;

-- Per-release pseudonym: the keyed digest of the value under a release key, itself the keyed digest of the
-- release name under the checked key. Equal within one release (its tables join on it), unrelated between
-- releases with different names and to anon_pseudonym() of the same key; reversing it needs the key.
CREATE OR REPLACE MACRO anon_release_pseudonym(value, key_name, release_name) AS
    CASE WHEN release_name IS NULL OR trim(release_name::VARCHAR) = ''
              THEN error('anon_release_pseudonym(): argument ''release_name'' must be a release name')
         WHEN value IS NULL THEN NULL
         ELSE anon_keyed_digest(anon_keyed_digest(anon_checked_key(key_name, 'anon_release_pseudonym'),
                                                  'release:' || release_name::VARCHAR), value::VARCHAR) END;

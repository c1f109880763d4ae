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

-- The keyed digest of a value (HMAC-style: SHA-256 of the key and the SHA-256 of the key and the value), 64
-- hex digits, or NULL for NULL. The key lives in a session variable, SET VARIABLE duckdb_anon_key_<key_name>
-- = '...', so it is never written to the database file; a missing key, or one anon_key_problem() objects
-- to, is refused on every read with an error naming `caller`. Pseudonyms and the keyed masking functions
-- (sql/69_masking.sql) all derive from it: same key and value, same digest in every table.
-- The digest itself, without the checks (for window orderings, which take no error()): use anon_keyed_digest.
CREATE OR REPLACE MACRO anon_keyed_hmac(key, value) AS sha256(key || sha256(key || value));

CREATE OR REPLACE MACRO anon_keyed_digest(value, key_name, caller) AS
    CASE WHEN value IS NULL THEN NULL
         WHEN key_name IS NULL THEN error(caller || ': argument ''key_name'' is NULL: name the pseudonym key')
         WHEN getvariable('duckdb_anon_key_' || key_name) IS NULL
         THEN error(caller || ': no pseudonym key in this session: SET VARIABLE duckdb_anon_key_' || key_name
                    || ' = ''<secret>'' (or duckdb_anon.set_pseudonym_key) first')
         WHEN anon_key_problem(getvariable('duckdb_anon_key_' || key_name)::VARCHAR) IS NOT NULL
         THEN error(caller || ': the pseudonym key duckdb_anon_key_' || key_name || ' '
                    || anon_key_problem(getvariable('duckdb_anon_key_' || key_name)::VARCHAR))
         ELSE anon_keyed_hmac(getvariable('duckdb_anon_key_' || key_name)::VARCHAR, value::VARCHAR) END;

-- Keyed pseudonym: the first 32 hex digits of the keyed digest. Same key and value give the same
-- pseudonym in every table.
CREATE OR REPLACE MACRO anon_pseudonym(value, key_name) AS left(anon_keyed_digest(value, key_name, 'anonymized()'), 32);

-- Per-release pseudonym: the keyed digest of the value under a release key, itself the keyed digest of the
-- release name under the checked key (32 hex digits each). Equal within one release (its tables join on it),
-- unrelated between releases with different names and to anon_pseudonym() of the same key; reversing it
-- needs the key.
CREATE OR REPLACE MACRO anon_release_pseudonym(value, key_name, release_name) AS
    CASE WHEN release_name IS NULL OR trim(release_name::VARCHAR) = ''
              THEN error('anon_release_pseudonym(): argument ''release_name'' must be a release name')
         WHEN value IS NULL THEN NULL
         ELSE left(anon_keyed_hmac(left(anon_keyed_digest('release:' || release_name::VARCHAR, key_name,
                                                          'anon_release_pseudonym()'), 32), value::VARCHAR), 32) END;

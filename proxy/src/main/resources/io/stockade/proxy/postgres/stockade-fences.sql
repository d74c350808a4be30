-- Stockade's fence table and functions, for the postgres backend (fence: table) and the postgres fence store.
-- The proxy runs this at start when 'migrate: true' (the default); with 'migrate: false' apply it yourself:
--   psql -d yourdb -f stockade-fences.sql
-- Re-running it is harmless. Once applied, the proxy marks it in the comment of stockade_fences (this file's
-- SHA-256) and does not run it again at start until the file changes or an object it checks is missing.

CREATE TABLE IF NOT EXISTS stockade_fences (
    scope      text PRIMARY KEY,
    token      bigint NOT NULL,
    version    text,
    updated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE stockade_fences ADD COLUMN IF NOT EXISTS version text;
ALTER TABLE stockade_fences ADD COLUMN IF NOT EXISTS updated_at timestamptz NOT NULL DEFAULT now();

-- Prefix floors (the admin API's 'raise --prefix'): a floor acts as a token accepted on every scope that starts
-- with its prefix, existing or not yet created. The empty prefix covers every scope. Floors only rise.
CREATE TABLE IF NOT EXISTS stockade_floors (
    prefix text PRIMARY KEY,
    token  bigint NOT NULL
);

-- One row every floor raise rewrites (stockade_raise_floor). A decision made under REPEATABLE READ or SERIALIZABLE
-- (the SQL listener's triggers: a client picks its own isolation) reads the floors with its transaction's snapshot,
-- which may be older than a raise that committed before the decision; it locks this row first (FOR SHARE), and
-- PostgreSQL fails such a transaction (40001, could not serialize) when the row was rewritten after its snapshot.
CREATE TABLE IF NOT EXISTS stockade_floor_epoch (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    raises bigint NOT NULL DEFAULT 0
);
-- (its one row written from a DO block: a driver that parses every statement of this file before running the first,
-- as pgjdbc does with prepareThreshold=-1, would find no table yet for a plain INSERT)
DO $epoch$ BEGIN
    INSERT INTO stockade_floor_epoch DEFAULT VALUES ON CONFLICT DO NOTHING;
END $epoch$;

-- The highest floor covering a scope, or -1. A prefix is compared as a plain string (starts_with), so '%' and '_'
-- in it are not wildcards.
CREATE OR REPLACE FUNCTION stockade_floor_of(p_scope text)
RETURNS bigint LANGUAGE sql STABLE AS $floor_of$
    SELECT coalesce(max(fl.token), -1) FROM stockade_floors fl WHERE starts_with(p_scope, fl.prefix)
$floor_of$;

-- Raises a floor (never lowers it) and answers the floor afterwards. It first takes an EXCLUSIVE lock on
-- stockade_fences: it waits for every transaction that is deciding a token (they hold ROW SHARE or ROW EXCLUSIVE
-- on the table until they commit) and holds off new ones until the floor is committed, so every decision reads
-- the floors either before the raise and commits before it, or reads them after it. Plain reads are not blocked.
CREATE OR REPLACE FUNCTION stockade_raise_floor(p_prefix text, p_token bigint)
RETURNS bigint LANGUAGE plpgsql AS $raise_floor$
DECLARE
    result bigint;
BEGIN
    LOCK TABLE stockade_fences IN EXCLUSIVE MODE;
    INSERT INTO stockade_floors AS fl (prefix, token) VALUES (p_prefix, p_token)
    ON CONFLICT (prefix) DO UPDATE SET token = GREATEST(fl.token, EXCLUDED.token)
    RETURNING fl.token INTO result;
    UPDATE stockade_floor_epoch SET raises = raises + 1;
    IF NOT FOUND THEN
        INSERT INTO stockade_floor_epoch (raises) VALUES (1);  -- the row was deleted: this raise puts it back
    END IF;
    RETURN result;
END
$raise_floor$;

-- The backend's fence, first in the write's transaction: locks the scope's row (FOR NO KEY UPDATE, the lock an
-- UPDATE takes, held until the transaction ends: writers of one scope run one after the other) and decides on the
-- token it holds. A higher token rewrites the row; an equal one the policy accepts leaves it as it is (no new row
-- version: the steady holder's write costs PostgreSQL no second row write); a scope with no row gets one.
-- A stale token raises SQLSTATE SF409 with the highest token as DETAIL, and a token jumping more than
-- p_max_advance over the highest raises SF422 (the policy's fence.max-advance); either rolls the whole
-- transaction back. A covering prefix floor (stockade_floors) refuses a token below it (or equal, unless
-- p_accept_equal) like a stored token does, also on a scope that has no row yet.
CREATE OR REPLACE FUNCTION stockade_fence(p_scope text, p_token bigint, p_accept_equal boolean,
                                          p_max_advance bigint)
RETURNS bigint LANGUAGE plpgsql AS $fence$
DECLARE
    highest bigint;
    floor_token bigint;
BEGIN
    -- The row lock's statement takes ROW SHARE on the table, so a floor being raised (stockade_raise_floor) is
    -- waited out; the floors are then read in a later statement, whose snapshot (taken after the lock) sees it.
    -- A row locked by another transaction is waited for, and its latest committed token is the one read.
    SELECT f.token INTO highest FROM stockade_fences f WHERE f.scope = p_scope FOR NO KEY UPDATE;
    -- stockade_floor_of's query, written out: PL/pgSQL keeps the plan of its own statements for the session, where
    -- PostgreSQL (before 18) plans a SQL function's query again in every transaction that calls it
    SELECT coalesce(max(fl.token), -1) INTO floor_token FROM stockade_floors fl WHERE starts_with(p_scope, fl.prefix);
    IF p_token < floor_token OR (p_token = floor_token AND NOT p_accept_equal) THEN
        RAISE EXCEPTION USING ERRCODE = 'SF409', MESSAGE = 'stockade: stale fencing token',
            DETAIL = GREATEST(highest, floor_token)::text;  -- GREATEST ignores a NULL highest
    END IF;
    -- A new scope: insert its row. When another transaction inserted it first (the insert waited for it), decide on
    -- its token under the row's lock; when that row is gone again by then (an operator's retire under a floor this
    -- token passed), insert once more.
    WHILE highest IS NULL LOOP
        INSERT INTO stockade_fences (scope, token, updated_at) VALUES (p_scope, p_token, now())
        ON CONFLICT (scope) DO NOTHING;
        IF FOUND THEN
            RETURN p_token;
        END IF;
        SELECT f.token INTO highest FROM stockade_fences f WHERE f.scope = p_scope FOR NO KEY UPDATE;
    END LOOP;
    IF p_token = highest AND p_accept_equal THEN
        RETURN p_token;
    END IF;
    IF p_token > highest AND p_token - highest <= p_max_advance THEN
        UPDATE stockade_fences f SET token = p_token, version = NULL, updated_at = now() WHERE f.scope = p_scope;
        RETURN p_token;
    END IF;
    IF p_token > highest THEN
        RAISE EXCEPTION USING ERRCODE = 'SF422', MESSAGE = 'stockade: token jumps too far', DETAIL = highest::text;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'SF409', MESSAGE = 'stockade: stale fencing token', DETAIL = highest::text;
END
$fence$;

-- Observe mode: keeps the high-water mark as enforce would (never lowers it) and answers the highest before,
-- or NULL for a new scope; nothing is refused. The highest before counts covering floors too. A token that jumps
-- more than p_max_advance over the scope's highest, or a new scope's first token above p_first_max, raises nothing,
-- as enforce (stockade_fence: SF422; the first token judged before it) would not.
CREATE OR REPLACE FUNCTION stockade_fence_observe(p_scope text, p_token bigint, p_max_advance bigint,
                                                  p_first_max bigint)
RETURNS bigint LANGUAGE plpgsql AS $observe$
DECLARE
    before bigint;
    floor_token bigint;
    own bigint;
BEGIN
    SELECT token INTO own FROM stockade_fences WHERE scope = p_scope FOR UPDATE;
    before := own;
    -- stockade_floor_of's query, written out (a plan kept for the session: see stockade_fence)
    SELECT coalesce(max(fl.token), -1) INTO floor_token FROM stockade_floors fl WHERE starts_with(p_scope, fl.prefix);
    IF floor_token >= 0 THEN
        before := GREATEST(before, floor_token);  -- GREATEST ignores a NULL before
    END IF;
    IF own IS NULL AND p_token > p_first_max THEN
        RETURN before;
    END IF;
    INSERT INTO stockade_fences AS f (scope, token, updated_at) VALUES (p_scope, p_token, now())
    ON CONFLICT (scope) DO UPDATE SET token = EXCLUDED.token, version = NULL, updated_at = now()
        WHERE f.token < EXCLUDED.token AND EXCLUDED.token - f.token <= p_max_advance;
    RETURN before;
END
$observe$;

-- The three-argument form: no bound on a first token.
CREATE OR REPLACE FUNCTION stockade_fence_observe(p_scope text, p_token bigint, p_max_advance bigint)
RETURNS bigint LANGUAGE sql AS $observe3$
    SELECT stockade_fence_observe(p_scope, p_token, p_max_advance, 9223372036854775807);
$observe3$;

-- The two-argument form of earlier releases: no bound on the jump.
CREATE OR REPLACE FUNCTION stockade_fence_observe(p_scope text, p_token bigint)
RETURNS bigint LANGUAGE sql AS $observe2$
    SELECT stockade_fence_observe(p_scope, p_token, 9223372036854775807, 9223372036854775807);
$observe2$;

-- The fence store's admission: the state before, and whether the token was admitted. A stale answer carries the
-- effective highest token (the scope's own or a covering floor's, whichever is higher); an accepted one the
-- scope's own state before (-1 for a new scope).
CREATE OR REPLACE FUNCTION stockade_advance(p_scope text, p_token bigint, p_accept_equal boolean,
                                            OUT accepted boolean, OUT token bigint, OUT version text)
LANGUAGE plpgsql AS $advance$
DECLARE
    cur_token bigint;
    cur_version text;
    floor_token bigint;
BEGIN
    -- The row lock's statement takes ROW SHARE on the table, so a floor being raised (stockade_raise_floor) is
    -- waited out; the floors are read in a later statement, whose snapshot sees it.
    SELECT f.token, f.version INTO cur_token, cur_version FROM stockade_fences f WHERE f.scope = p_scope FOR UPDATE;
    -- stockade_floor_of's query, written out (a plan kept for the session: see stockade_fence)
    SELECT coalesce(max(fl.token), -1) INTO floor_token FROM stockade_floors fl WHERE starts_with(p_scope, fl.prefix);
    IF p_token < floor_token OR (p_token = floor_token AND NOT p_accept_equal) THEN
        accepted := false; token := GREATEST(cur_token, floor_token); version := NULL;
        RETURN;
    END IF;
    -- a new scope, as in stockade_fence: insert, or decide on the row another transaction inserted first (insert
    -- again if it is gone by then)
    WHILE cur_token IS NULL LOOP
        INSERT INTO stockade_fences (scope, token, updated_at) VALUES (p_scope, p_token, now())
        ON CONFLICT (scope) DO NOTHING;
        IF FOUND THEN
            accepted := true; token := -1; version := NULL;
            RETURN;
        END IF;
        SELECT f.token, f.version INTO cur_token, cur_version FROM stockade_fences f
            WHERE f.scope = p_scope FOR UPDATE;
    END LOOP;
    IF p_token > cur_token THEN
        UPDATE stockade_fences f SET token = p_token, version = NULL, updated_at = now() WHERE f.scope = p_scope;
        accepted := true; token := cur_token; version := cur_version;
    ELSIF p_token = cur_token AND p_accept_equal THEN
        accepted := true; token := cur_token; version := cur_version;
    ELSE
        accepted := false; token := cur_token; version := NULL;
    END IF;
END
$advance$;

-- The registry of proxy runs (the postgres fence store's; the backend does not use it): a row per run that has not
-- stopped cleanly, its beat rising every second while it runs; the row named '' marks the registry as started. A
-- start that finds every earlier run gone (stopped cleanly) or beating opens its serialized policies at once
-- instead of settling (docs/replicas.md, "Restarts").
CREATE TABLE IF NOT EXISTS stockade_runs (
    run        text PRIMARY KEY,
    beat       bigint NOT NULL,
    settle_ms  bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

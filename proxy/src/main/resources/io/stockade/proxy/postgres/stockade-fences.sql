-- Stockade's fence table and functions, for the postgres backend (fence: table) and the postgres fence store.
-- The proxy runs this at start when 'migrate: true' (the default); with 'migrate: false' apply it yourself:
--   psql -d yourdb -f stockade-fences.sql
-- Re-running it is harmless.

CREATE TABLE IF NOT EXISTS stockade_fences (
    scope      text PRIMARY KEY,
    token      bigint NOT NULL,
    version    text,
    updated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE stockade_fences ADD COLUMN IF NOT EXISTS version text;
ALTER TABLE stockade_fences ADD COLUMN IF NOT EXISTS updated_at timestamptz NOT NULL DEFAULT now();

-- The backend's fence: bumps the scope's row with a conditional upsert, first in the write's transaction.
-- A stale token raises SQLSTATE SF409 with the highest token as DETAIL, and a token jumping more than
-- p_max_advance over the highest raises SF422 (the policy's fence.max-advance); either rolls the whole
-- transaction back.
CREATE OR REPLACE FUNCTION stockade_fence(p_scope text, p_token bigint, p_accept_equal boolean,
                                          p_max_advance bigint)
RETURNS bigint LANGUAGE plpgsql AS $fence$
DECLARE
    highest bigint;
BEGIN
    INSERT INTO stockade_fences AS f (scope, token, updated_at) VALUES (p_scope, p_token, now())
    ON CONFLICT (scope) DO UPDATE SET token = EXCLUDED.token, version = NULL, updated_at = now()
        WHERE (f.token < EXCLUDED.token AND EXCLUDED.token - f.token <= p_max_advance)
           OR (p_accept_equal AND f.token = EXCLUDED.token);
    IF FOUND THEN
        RETURN p_token;
    END IF;
    -- The conflicting row is locked by now; this read (a new snapshot) sees its latest committed token.
    SELECT token INTO highest FROM stockade_fences WHERE scope = p_scope;
    IF p_token > highest THEN
        RAISE EXCEPTION USING ERRCODE = 'SF422', MESSAGE = 'stockade: token jumps too far', DETAIL = highest::text;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'SF409', MESSAGE = 'stockade: stale fencing token', DETAIL = highest::text;
END
$fence$;

-- Observe mode: keeps the high-water mark as enforce would (never lowers it) and answers the highest before,
-- or NULL for a new scope; nothing is refused.
CREATE OR REPLACE FUNCTION stockade_fence_observe(p_scope text, p_token bigint)
RETURNS bigint LANGUAGE plpgsql AS $observe$
DECLARE
    before bigint;
BEGIN
    SELECT token INTO before FROM stockade_fences WHERE scope = p_scope FOR UPDATE;
    INSERT INTO stockade_fences AS f (scope, token, updated_at) VALUES (p_scope, p_token, now())
    ON CONFLICT (scope) DO UPDATE SET token = EXCLUDED.token, version = NULL, updated_at = now()
        WHERE f.token < EXCLUDED.token;
    RETURN before;
END
$observe$;

-- The fence store's admission: the state before, and whether the token was admitted.
CREATE OR REPLACE FUNCTION stockade_advance(p_scope text, p_token bigint, p_accept_equal boolean,
                                            OUT accepted boolean, OUT token bigint, OUT version text)
LANGUAGE plpgsql AS $advance$
DECLARE
    cur_token bigint;
    cur_version text;
BEGIN
    SELECT f.token, f.version INTO cur_token, cur_version FROM stockade_fences f WHERE f.scope = p_scope FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO stockade_fences (scope, token, updated_at) VALUES (p_scope, p_token, now())
        ON CONFLICT (scope) DO NOTHING;
        IF FOUND THEN
            accepted := true; token := -1; version := NULL;
            RETURN;
        END IF;
        SELECT f.token, f.version INTO cur_token, cur_version FROM stockade_fences f
            WHERE f.scope = p_scope FOR UPDATE;
    END IF;
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

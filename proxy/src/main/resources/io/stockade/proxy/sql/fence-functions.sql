-- Stockade's SQL fence: the functions the fenced tables' triggers call. Owned by @role@, run as @role@
-- (SECURITY DEFINER, search_path pinned), EXECUTE revoked from PUBLIC: the application's roles reach them only
-- through the triggers. Written by 'stockade sql install'; see docs/sql.md.

-- The session's token, taken only with a proof that the Stockade listener set it (unless direct clients are
-- trusted). stockade.fencing_token holds '<token>' (a client of its own) or '<token>;<binding>:<mac>' (the
-- listener): mac = hex(HMAC-SHA256(key, '<token>;<binding>')) with the key only the listener and @role@ know, and
-- binding 's:<pid>:<backend start, microseconds>' (a session's token: this backend only) or 't:<expiry, epoch
-- milliseconds>' (SET LOCAL: a transaction that started before the expiry). NULL: no token and writes without one
-- are allowed.
CREATE OR REPLACE FUNCTION @schema@.token_of(p_table text, p_missing_allow boolean, p_trust_direct boolean)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $token_of$
DECLARE
    raw text := current_setting('stockade.fencing_token', true);
    semi int;
    digits text;
    proof text;
    colon int;
    signed text;
    mac text;
    parts text[];
    k record;
BEGIN
    IF raw IS NULL OR raw = '' THEN
        IF p_missing_allow THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'SF428',
            MESSAGE = format('stockade: no fencing token: writes to %s need one (set stockade.fencing_token)',
                             p_table),
            DETAIL = json_build_object('table', p_table)::text,
            HINT = 'connect with options=-c stockade.fencing_token=N, or SET LOCAL stockade.fencing_token = N';
    END IF;
    semi := position(';' IN raw);
    digits := CASE WHEN semi = 0 THEN raw ELSE left(raw, semi - 1) END;
    IF digits !~ '^(0|[1-9][0-9]{0,18})$' OR (length(digits) = 19 AND digits > '9223372036854775807') THEN
        RAISE EXCEPTION USING ERRCODE = 'SF400',
            MESSAGE = format('stockade: malformed fencing token %L: decimal digits 0..9223372036854775807, no sign,'
                             ' no leading zeros', left(digits, 40)),
            DETAIL = json_build_object('table', p_table)::text;
    END IF;
    IF semi = 0 THEN
        IF p_trust_direct THEN
            RETURN digits::bigint;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'SF403',
            MESSAGE = format('stockade: fencing token %s was not set through the Stockade listener: a token is'
                             ' taken only from the listener (direct-clients: refuse)', digits),
            DETAIL = json_build_object('table', p_table, 'token', digits::bigint)::text;
    END IF;
    colon := length(raw) - position(':' IN reverse(raw)) + 1;
    signed := left(raw, colon - 1);
    mac := substr(raw, colon + 1);
    parts := string_to_array(substr(signed, semi + 1), ':');
    IF parts[1] = 's' AND cardinality(parts) = 3 THEN
        IF parts[2] IS DISTINCT FROM pg_backend_pid()::text OR parts[3] IS DISTINCT FROM (
                SELECT (extract(epoch FROM a.backend_start) * 1000000)::bigint::text
                FROM pg_stat_get_activity(pg_backend_pid()) a) THEN
            RAISE EXCEPTION USING ERRCODE = 'SF403',
                MESSAGE = format('stockade: fencing token %s was proved for another session: set it in this one'
                                 ' (behind a transaction pooler, with SET LOCAL in each transaction)', digits),
                DETAIL = json_build_object('table', p_table, 'token', digits::bigint)::text;
        END IF;
    ELSIF parts[1] = 't' AND cardinality(parts) = 2 AND parts[2] ~ '^[0-9]{1,15}$' THEN
        IF now() > to_timestamp(parts[2]::bigint / 1000.0) THEN
            RAISE EXCEPTION USING ERRCODE = 'SF403',
                MESSAGE = format('stockade: the proof of fencing token %s expired before this transaction began:'
                                 ' SET LOCAL it in the transaction that writes', digits),
                DETAIL = json_build_object('table', p_table, 'token', digits::bigint)::text;
        END IF;
    ELSE
        parts := NULL;
    END IF;
    SELECT s.inner_key, s.outer_key INTO k FROM @schema@.stockade_secret s WHERE s.id = 1;
    IF parts IS NULL OR k IS NULL OR mac !~ '^[0-9a-f]{64}$' OR mac <> encode(sha256(k.outer_key
            || sha256(k.inner_key || convert_to(signed, 'UTF8'))), 'hex') THEN
        RAISE EXCEPTION USING ERRCODE = 'SF403',
            MESSAGE = format('stockade: fencing token %s carries no valid proof of the Stockade listener', digits),
            DETAIL = json_build_object('table', p_table, 'token', digits::bigint)::text;
    END IF;
    RETURN digits::bigint;
END
$token_of$;

-- A column of the row, for its scope: NULL has no scope, so the write is refused.
CREATE OR REPLACE FUNCTION @schema@.part_of(p_value text, p_table text, p_column text)
RETURNS text LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $part_of$
BEGIN
    IF p_value IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'SF400',
            MESSAGE = format('stockade: column %s of a row of %s is NULL: the row has no fence scope', p_column,
                             p_table),
            DETAIL = json_build_object('table', p_table, 'column', p_column)::text;
    END IF;
    RETURN p_value;
END
$part_of$;

-- The check, in the writing transaction: a token above the scope's highest raises it with a conditional upsert
-- (the row stays locked until the transaction ends); an equal one is taken when the policy accepts equal tokens
-- or this transaction raised the scope itself, under a share lock, so a newer holder's raise waits for this
-- transaction to end; anything lower is stale. A covering prefix floor counts as a highest token.
CREATE OR REPLACE FUNCTION @schema@.admit(p_table text, p_scope text, p_token bigint, p_accept_equal boolean,
                                          p_max_advance bigint)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $admit$
DECLARE
    cur bigint;
    cur_tx bigint;
    me bigint := txid_current();
    floor_token bigint;
    highest bigint;
BEGIN
    -- waits out a floor being raised (stockade_raise_floor locks the table EXCLUSIVE while it writes one)
    LOCK TABLE @schema@.stockade_fences IN ROW EXCLUSIVE MODE;
    IF current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN
        -- this transaction reads with a snapshot taken at its first statement, which may predate a floor raised
        -- since: locking the row every raise rewrites fails it (40001) when one committed after that snapshot
        PERFORM 1 FROM @schema@.stockade_floor_epoch FOR SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = 'stockade: the fence''s stockade_floor_epoch has no row, so a write under '
                          || upper(current_setting('transaction_isolation'))
                          || ' cannot tell whether a floor was raised after its snapshot',
                HINT = 'run stockade sql install again (it puts the row back)';
        END IF;
    END IF;
    SELECT coalesce(max(fl.token), -1) INTO floor_token FROM @schema@.stockade_floors fl
        WHERE starts_with(p_scope, fl.prefix);
    SELECT f.token, f.txid INTO cur, cur_tx FROM @schema@.stockade_fences f WHERE f.scope = p_scope;
    IF p_token > floor_token OR (p_token = floor_token AND p_accept_equal) THEN
        IF cur IS NULL OR p_token > cur THEN
            INSERT INTO @schema@.stockade_fences AS f (scope, token, txid, updated_at)
                VALUES (p_scope, p_token, me, now())
            ON CONFLICT (scope) DO UPDATE SET token = EXCLUDED.token, txid = EXCLUDED.txid, version = NULL,
                                              updated_at = now()
                WHERE (f.token < EXCLUDED.token AND EXCLUDED.token - f.token <= p_max_advance)
                   OR (f.token = EXCLUDED.token AND (p_accept_equal OR f.txid = EXCLUDED.txid));
            IF FOUND THEN
                RETURN;
            END IF;
        ELSIF p_token = cur AND (p_accept_equal OR cur_tx = me) THEN
            -- the newest committed version once any raise being made has ended
            SELECT f.token INTO cur FROM @schema@.stockade_fences f WHERE f.scope = p_scope FOR SHARE;
            IF cur = p_token THEN
                RETURN;
            END IF;
        END IF;
        SELECT f.token INTO cur FROM @schema@.stockade_fences f WHERE f.scope = p_scope;
    END IF;
    highest := GREATEST(cur, floor_token);
    IF p_token > highest THEN
        RAISE EXCEPTION USING ERRCODE = 'SF422',
            MESSAGE = format('stockade: fencing token %s for %s scope %L jumps more than %s over the highest %s'
                             ' (fence.max-advance)', p_token, p_table, p_scope, p_max_advance, highest),
            DETAIL = json_build_object('table', p_table, 'scope', p_scope, 'token', p_token,
                                       'highest', highest)::text,
            SCHEMA = split_part(p_table, '.', 1), TABLE = split_part(p_table, '.', 2);
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'SF409',
        MESSAGE = format('stockade: stale fencing token %s for %s scope %L: the highest accepted is %s%s', p_token,
                         p_table, p_scope, highest,
                         CASE WHEN p_token = highest THEN ' (equal tokens are refused: fence.equal reject)'
                              ELSE '; a newer holder owns it' END),
        DETAIL = json_build_object('table', p_table, 'scope', p_scope, 'token', p_token, 'highest', highest)::text,
        HINT = 'nothing this transaction wrote will commit',
        SCHEMA = split_part(p_table, '.', 1), TABLE = split_part(p_table, '.', 2);
END
$admit$;

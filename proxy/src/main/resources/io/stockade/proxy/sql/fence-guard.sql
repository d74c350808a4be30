-- The guard: the fence stays whole through DDL. After every CREATE TABLE, ALTER TABLE, DROP TRIGGER and ALTER
-- TRIGGER in this database, each fenced table (by oid: a rename does not lose it) and every partition below it must
-- carry Stockade's row trigger, enabled ALWAYS, and its TRUNCATE trigger:
--   * a partition created since the install (PostgreSQL clones row triggers to it, not statement triggers) gets the
--     TRUNCATE trigger here, so a TRUNCATE of the parent or of the partition is checked like any other;
--   * a partition that arrives with rows (ATTACH PARTITION of a table that has some) is refused: no fence checked
--     those rows, and attaching them would be a write nobody fenced;
--   * a statement that disables, drops or renames a fence trigger is refused, whoever runs it (an owner of the
--     table too). A superuser who must (a restore with --disable-triggers) can ALTER EVENT TRIGGER
--     stockade_fence_guard DISABLE, and owns what that lets in.
-- Owned by the superuser that ran the install (it creates triggers on tables of any owner), SECURITY DEFINER,
-- search_path pinned; it reads nothing but the catalog and stockade_guarded.
CREATE TABLE IF NOT EXISTS @schema@.stockade_guarded (relid oid PRIMARY KEY, row_fn oid NOT NULL,
    truncate_fn oid NOT NULL, columns text NOT NULL);
ALTER TABLE @schema@.stockade_guarded OWNER TO @role@;
REVOKE ALL ON @schema@.stockade_guarded FROM PUBLIC;
TRUNCATE @schema@.stockade_guarded;
@guarded@
CREATE OR REPLACE FUNCTION @schema@.fence_guard() RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    f record;
    p regclass;
    rows_in boolean;
BEGIN
    FOR f IN SELECT g.relid::regclass AS root, g.row_fn, g.truncate_fn, g.columns FROM @schema@.stockade_guarded g
             WHERE EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = g.relid) LOOP
        FOR p IN SELECT t.relid FROM pg_partition_tree(f.root) t UNION SELECT f.root LOOP
            IF NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = p AND t.tgname = 'stockade_fence_row'
                           AND t.tgfoid = f.row_fn AND t.tgenabled = 'A') THEN
                RAISE EXCEPTION USING ERRCODE = 'SF405',
                    MESSAGE = format('stockade: this statement would leave %s (fenced: %s) without Stockade''s row'
                                     ' trigger stockade_fence_row enabled ALWAYS: refused', p, f.root),
                    HINT = 'the fence triggers are not disabled, dropped or renamed; to stop fencing a table, take'
                           ' it out of sql.policies and run stockade sql install again';
            END IF;
            IF NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = p AND t.tgname = 'stockade_fence_truncate'
                           AND t.tgfoid = f.truncate_fn) THEN
                EXECUTE format('SELECT EXISTS (SELECT 1 FROM ONLY %s)', p) INTO rows_in;
                IF rows_in OR p = f.root THEN
                    RAISE EXCEPTION USING ERRCODE = 'SF405',
                        MESSAGE = format('stockade: this statement would leave %s (fenced: %s) without Stockade''s'
                                         ' TRUNCATE trigger stockade_fence_truncate%s: refused', p, f.root,
                                         CASE WHEN rows_in THEN ', with rows no fence checked' ELSE '' END),
                        HINT = 'attach only an empty partition, and write its rows through the Stockade listener'
                               ' with a token; the fence triggers are not dropped or renamed';
                END IF;
                EXECUTE format('CREATE TRIGGER stockade_fence_truncate BEFORE TRUNCATE ON %s FOR EACH STATEMENT'
                               ' EXECUTE FUNCTION %s()', p, f.truncate_fn::regproc);
                EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER stockade_fence_truncate', p);
                IF f.columns <> '' THEN
                    EXECUTE format('GRANT SELECT (%s) ON %s TO @role@', f.columns, p);
                END IF;
            ELSIF NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = p AND t.tgname = 'stockade_fence_truncate'
                              AND t.tgenabled = 'A') THEN
                RAISE EXCEPTION USING ERRCODE = 'SF405',
                    MESSAGE = format('stockade: this statement would leave %s (fenced: %s) without Stockade''s'
                                     ' TRUNCATE trigger stockade_fence_truncate enabled ALWAYS: refused', p, f.root),
                    HINT = 'the fence triggers are not disabled, dropped or renamed; to stop fencing a table, take'
                           ' it out of sql.policies and run stockade sql install again';
            END IF;
        END LOOP;
    END LOOP;
END
$guard$;
-- an event trigger runs its function with the privileges of whoever ran the DDL: each must be able to call it
-- (a function returning event_trigger cannot be called any other way)
GRANT EXECUTE ON FUNCTION @schema@.fence_guard() TO PUBLIC;
CREATE EVENT TRIGGER stockade_fence_guard ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'DROP TRIGGER', 'ALTER TRIGGER')
    EXECUTE FUNCTION @schema@.fence_guard();
ALTER EVENT TRIGGER stockade_fence_guard ENABLE ALWAYS;

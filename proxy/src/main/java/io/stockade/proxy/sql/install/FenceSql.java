package io.stockade.proxy.sql.install;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;

import io.stockade.policy.Policy;
import io.stockade.policy.SqlConfig;

import org.jspecify.annotations.Nullable;

/**
 * The SQL that puts Stockade's fence into a database and takes it out again ({@code stockade sql install} and
 * {@code uninstall}): the fence role and schema, the fence table (the postgres store's {@code stockade_fences} and
 * {@code stockade_floors}, so the admin API's statements work on it), the key the listener proves its tokens with,
 * the check functions, and on each fenced table an AFTER row trigger for INSERT, UPDATE and DELETE (it sees the row
 * as written, after every BEFORE trigger) and a BEFORE TRUNCATE statement trigger that checks the scope of every row
 * the TRUNCATE removes, on the table and on each of its partitions; every trigger {@code ENABLE ALWAYS}, so
 * {@code session_replication_role} does not turn it off. One transaction; running it again is harmless, and drops
 * Stockade's triggers from tables the configuration no longer names. Every name comes from the policy file, where
 * the loader allowed only plain identifiers.
 */
public final class FenceSql {
    /** The name of the row trigger and of the TRUNCATE trigger on every fenced table. */
    public static final String ROW_TRIGGER = "stockade_fence_row";
    public static final String TRUNCATE_TRIGGER = "stockade_fence_truncate";
    /** The event trigger that keeps the fence whole through DDL ({@code fence-guard.sql}). */
    public static final String GUARD = "stockade_fence_guard";
    /**
     * The settings a row's scope is written under, whatever the session set: a column's text form depends on
     * DateStyle, TimeZone, IntervalStyle, extra_float_digits, bytea_output and lc_monetary, and a scope that moves
     * with a session setting is a scope a zombie can step out of (SET DateStyle = German, and its date row has a
     * scope no holder ever raised).
     */
    static final String PINNED = "    SET search_path = pg_catalog, pg_temp SET DateStyle = 'ISO, MDY'"
            + " SET TimeZone = 'UTC'\n    SET IntervalStyle = 'postgres' SET extra_float_digits = 1"
            + " SET bytea_output = 'hex' SET lc_monetary = 'C'";
    /** The SQLSTATEs of the fence: Stockade's own class, SF. */
    public static final String STALE = "SF409";
    public static final String TOO_FAR = "SF422";
    public static final String MISSING = "SF428";
    public static final String UNVERIFIED = "SF403";
    public static final String MALFORMED = "SF400";
    /** A statement the listener refuses to relay. */
    public static final String REFUSED = "SF405";
    /** The listener could not check a token (its lock service did not answer). */
    public static final String UNAVAILABLE = "SF503";

    private final SqlConfig config;

    public FenceSql(SqlConfig config) {
        this.config = Objects.requireNonNull(config, "config");
    }

    /**
     * The install script.
     *
     * @param secret the first line of {@code sql.secret-file}, or {@code null} for a printed script (the key is then
     *               left out: {@code <redacted>})
     */
    public String install(@Nullable String secret) throws IOException {
        String schema = config.schema();
        String role = config.fenceRole();
        StringBuilder sql = new StringBuilder(16_384);
        sql.append("-- Stockade SQL fence for database ").append(config.database().name())
                .append(": install (run as a superuser; running it again is harmless)\n")
                .append("BEGIN;\n")
                .append("SELECT pg_advisory_xact_lock(hashtext('stockade sql install'));\n")
                .append("-- the guard would refuse the install's own trigger changes: made again at the end\n")
                .append("DROP EVENT TRIGGER IF EXISTS ").append(GUARD).append(";\n")
                .append("DROP FUNCTION IF EXISTS ").append(schema).append(".fence_guard();\n")
                .append("DO $role$ BEGIN\n")
                .append("    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '").append(role).append("') THEN\n")
                .append("        CREATE ROLE ").append(role).append(" NOLOGIN;\n")
                .append("    END IF;\n")
                .append("END $role$;\n")
                .append("-- the check compares a proof with this session's start, which pg_stat_activity shows only\n")
                .append("-- to roles that may read every session's statistics\n")
                .append("GRANT pg_read_all_stats TO ").append(role).append(";\n")
                .append("CREATE SCHEMA IF NOT EXISTS ").append(schema).append(" AUTHORIZATION ").append(role)
                .append(";\n")
                .append("ALTER SCHEMA ").append(schema).append(" OWNER TO ").append(role).append(";\n")
                .append("REVOKE ALL ON SCHEMA ").append(schema).append(" FROM PUBLIC;\n")
                .append("SET LOCAL ROLE ").append(role).append(";\n")
                .append("SET LOCAL search_path = ").append(schema).append(";\n")
                .append(resource("/io/stockade/proxy/postgres/stockade-fences.sql"))
                .append("ALTER TABLE stockade_fences ADD COLUMN IF NOT EXISTS txid bigint;\n")
                .append("CREATE TABLE IF NOT EXISTS stockade_secret (id int PRIMARY KEY CHECK (id = 1),"
                        + " inner_key bytea NOT NULL, outer_key bytea NOT NULL);\n")
                .append(secretRow(secret))
                .append(resource("/io/stockade/proxy/sql/fence-functions.sql").replace("@schema@", schema)
                        .replace("@role@", role));
        for (SqlConfig.SqlPolicy policy : config.policies()) {
            for (SqlConfig.FencedTable table : policy.tables()) {
                sql.append(functions(policy, table));
            }
        }
        sql.append("REVOKE ALL ON ALL TABLES IN SCHEMA ").append(schema).append(" FROM PUBLIC;\n")
                .append("REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ").append(schema).append(" FROM PUBLIC;\n")
                .append("-- a partition's owner clones the row trigger when it creates or attaches one: the trigger\n")
                .append("-- functions cannot be called but as triggers, so EXECUTE on them opens nothing\n")
                .append(triggerGrants())
                .append("RESET ROLE;\n")
                .append("RESET search_path;\n")
                .append(dropOthers());
        for (SqlConfig.FencedTable table : config.tables()) {
            sql.append(triggers(table));
        }
        sql.append(resource("/io/stockade/proxy/sql/fence-guard.sql").replace("@guarded@", guarded())
                .replace("@schema@", schema).replace("@role@", role));
        return sql.append("COMMIT;\n").toString();
    }

    /**
     * The uninstall script: the triggers and the check functions go; the fence table (every scope's highest token)
     * stays unless {@code dropFences}, so a later install starts from the tokens already accepted.
     */
    public String uninstall(boolean dropFences) {
        String schema = config.schema();
        StringBuilder sql = new StringBuilder(2048);
        sql.append("-- Stockade SQL fence for database ").append(config.database().name())
                .append(": uninstall (running it again is harmless)\n")
                .append("BEGIN;\n")
                .append("SELECT pg_advisory_xact_lock(hashtext('stockade sql install'));\n")
                .append("DROP EVENT TRIGGER IF EXISTS ").append(GUARD).append(";\n")
                .append(dropTriggers(null));
        if (dropFences) {
            sql.append("DROP SCHEMA IF EXISTS ").append(schema).append(" CASCADE;\n");
        } else {
            sql.append("DO $functions$ DECLARE f regprocedure; BEGIN\n")
                    .append("    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = ")
                    .append("p.pronamespace\n")
                    .append("             WHERE n.nspname = '").append(schema)
                    .append("' AND (p.proname LIKE 'fence\\_%'")
                    .append(" OR p.proname IN ('token_of', 'part_of', 'admit')) LOOP\n")
                    .append("        EXECUTE format('DROP FUNCTION %s', f);\n")
                    .append("    END LOOP;\n")
                    .append("END $functions$;\n")
                    .append("DROP TABLE IF EXISTS ").append(schema).append(".stockade_secret;\n")
                    .append("DROP TABLE IF EXISTS ").append(schema).append(".stockade_guarded;\n");
        }
        return sql.append("COMMIT;\n").toString();
    }

    private String triggerGrants() {
        StringBuilder out = new StringBuilder();
        for (SqlConfig.FencedTable table : config.tables()) {
            String function = config.schema() + "." + functionName(table);
            out.append("GRANT EXECUTE ON FUNCTION ").append(function).append("(), ").append(function)
                    .append("_truncate() TO PUBLIC;\n");
        }
        return out.toString();
    }

    /** The guard's rows: each fenced table by oid, its two trigger functions, the columns its scope reads. */
    private String guarded() {
        StringBuilder rows = new StringBuilder();
        for (SqlConfig.FencedTable table : config.tables()) {
            String function = config.schema() + "." + functionName(table);
            String into = "INSERT INTO " + config.schema() + ".stockade_guarded VALUES\n    ";
            rows.append(rows.isEmpty() ? into : ",\n    ")
                    .append("('").append(table.qualified()).append("'::regclass, '").append(function)
                    .append("()'::regprocedure, '").append(function).append("_truncate()'::regprocedure, '")
                    .append(String.join(", ", table.columns())).append("')");
        }
        return rows.isEmpty() ? "" : rows.append(";").toString();
    }

    /** The row of the listener's key, as HMAC-SHA256's inner and outer padded keys (no pgcrypto needed). */
    private static String secretRow(@Nullable String secret) {
        if (secret == null) {
            return "-- the key's row is left out of a printed script: install writes it from sql.secret-file\n";
        }
        byte[] key = hmacKey(secret);
        byte[] inner = new byte[64];
        byte[] outer = new byte[64];
        for (int i = 0; i < 64; i++) {
            byte b = i < key.length ? key[i] : 0;
            inner[i] = (byte) (b ^ 0x36);
            outer[i] = (byte) (b ^ 0x5c);
        }
        HexFormat hex = HexFormat.of();
        return "INSERT INTO stockade_secret (id, inner_key, outer_key) VALUES (1, '\\x" + hex.formatHex(inner)
                + "', '\\x" + hex.formatHex(outer) + "')\n"
                + "    ON CONFLICT (id) DO UPDATE SET inner_key = EXCLUDED.inner_key,"
                + " outer_key = EXCLUDED.outer_key;\n";
    }

    /** The HMAC key both sides use: SHA-256 of the secret's UTF-8 bytes. */
    public static byte[] hmacKey(String secret) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    /** The row function and the TRUNCATE function of one table. */
    private String functions(SqlConfig.SqlPolicy policy, SqlConfig.FencedTable table) {
        String schema = config.schema();
        String name = functionName(table);
        String q = table.qualified();
        String args = "'" + q + "', " + (policy.missing() == Policy.MissingToken.ALLOW) + ", "
                + (config.direct() == SqlConfig.DirectClients.TRUST);
        String check = ", t, " + (policy.equal() == Policy.EqualToken.ACCEPT) + ", " + policy.maxAdvance() + ")";
        // The scope is the columns' text, not their values: numeric 1.0 and 1.00 are equal and two scopes, so an
        // UPDATE is checked on its new scope whenever the text differs (a row moved to a scope no check ever saw
        // would be open to any token)
        String scopeChanged = table.columns().isEmpty() ? "false"
                : "(" + scopeExpression(table, "NEW.") + ") IS DISTINCT FROM (" + scopeExpression(table, "OLD.") + ")";
        return "-- " + q + " (policy " + policy.name() + "): scope " + table.scope() + "\n"
                + "CREATE OR REPLACE FUNCTION " + schema + "." + name + "() RETURNS trigger LANGUAGE plpgsql"
                + " SECURITY DEFINER\n" + PINNED + " AS $fence$\n"
                + "DECLARE\n    t bigint := " + schema + ".token_of(" + args + ");\nBEGIN\n"
                + "    IF t IS NULL THEN\n        RETURN NULL;\n    END IF;\n"
                + "    IF TG_OP <> 'INSERT' THEN\n"
                + "        PERFORM " + schema + ".admit('" + q + "', " + scopeExpression(table, "OLD.") + check
                + ";\n    END IF;\n"
                + "    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND (" + scopeChanged + ")) THEN\n"
                + "        PERFORM " + schema + ".admit('" + q + "', " + scopeExpression(table, "NEW.") + check
                + ";\n    END IF;\n"
                + "    RETURN NULL;\nEND\n$fence$;\n"
                + "-- TRUNCATE removes every row: each scope it removes is checked, on the table truncated (a\n"
                + "-- partition's own rows when the trigger fires for a partition). It must see every row: at READ\n"
                + "-- COMMITTED its read comes after TRUNCATE's lock, where no row can be missing (a snapshot older\n"
                + "-- than the lock would miss rows TRUNCATE removes all the same), and no row-level security may\n"
                + "-- hide one from the fence role (with row_security off, a policy that would is an error)\n"
                + "CREATE OR REPLACE FUNCTION " + schema + "." + name + "_truncate() RETURNS trigger LANGUAGE"
                + " plpgsql SECURITY DEFINER\n" + PINNED + " SET row_security = off AS $fence$\n"
                + "DECLARE\n    t bigint := " + schema + ".token_of(" + args + ");\n    s text;\nBEGIN\n"
                + "    IF t IS NULL THEN\n        RETURN NULL;\n    END IF;\n"
                + "    IF current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN\n"
                + "        RAISE EXCEPTION USING ERRCODE = 'feature_not_supported',\n"
                + "            MESSAGE = format('stockade: TRUNCATE of %s at %s is refused: it removes rows committed"
                + " after this transaction''s snapshot, which the fence check cannot see', '" + q
                + "', upper(current_setting('transaction_isolation'))),\n"
                + "            HINT = 'TRUNCATE at READ COMMITTED, or DELETE the rows';\n    END IF;\n"
                + "    BEGIN\n"
                + "        FOR s IN EXECUTE format('SELECT DISTINCT " + scopeExpression(table, "r.").replace("'", "''")
                + " FROM ONLY %s r', TG_RELID::regclass) LOOP\n"
                + "            PERFORM " + schema + ".admit('" + q + "', s" + check + ";\n        END LOOP;\n"
                + "    EXCEPTION WHEN insufficient_privilege THEN\n"
                + "        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', MESSAGE = format('stockade:"
                + " TRUNCATE of %s is refused: %s, so the fence check cannot see every row it removes', '" + q
                + "', SQLERRM),\n"
                + "            HINT = 'give the fence role BYPASSRLS, or DELETE the rows';\n"
                + "    END;\n"
                + "    RETURN NULL;\nEND\n$fence$;\n";
    }

    /** The scope of a row: the template's literals and its columns as text ({@code 'jobs/' || part(OLD.id)}). */
    String scopeExpression(SqlConfig.FencedTable table, String row) {
        List<String> variables = table.scope().variables();
        String template = table.scope().toString();
        StringBuilder out = new StringBuilder();
        int i = 0;
        for (String column : variables) {
            int open = template.indexOf("{" + column + "}", i);
            appendLiteral(out, template.substring(i, open));
            out.append(out.isEmpty() ? "" : " || ").append(config.schema()).append(".part_of(").append(row)
                    .append(column).append("::text, '").append(table.qualified()).append("', '").append(column)
                    .append("')");
            i = open + column.length() + 2;
        }
        appendLiteral(out, template.substring(i));
        return out.isEmpty() ? "''" : out.toString();
    }

    private static void appendLiteral(StringBuilder out, String literal) {
        if (!literal.isEmpty()) {
            out.append(out.isEmpty() ? "" : " || ").append('\'').append(literal.replace("'", "''")).append('\'');
        }
    }

    /**
     * The triggers of a table, on it and on every partition below it (a row trigger on a partitioned table is
     * cloned to its partitions by PostgreSQL, a TRUNCATE trigger is not); the scope's columns readable by the fence
     * role, for the TRUNCATE check.
     */
    private String triggers(SqlConfig.FencedTable table) {
        String q = table.qualified();
        String function = config.schema() + "." + functionName(table);
        String columns = String.join(", ", table.columns());
        return "DROP TRIGGER IF EXISTS " + ROW_TRIGGER + " ON " + q + ";\n"
                + "CREATE TRIGGER " + ROW_TRIGGER + " AFTER INSERT OR UPDATE OR DELETE ON " + q
                + " FOR EACH ROW EXECUTE FUNCTION " + function + "();\n"
                + "DO $triggers$ DECLARE r regclass; BEGIN\n"
                + "    FOR r IN SELECT relid FROM pg_partition_tree('" + q + "'::regclass) UNION SELECT '" + q
                + "'::regclass LOOP\n"
                + "        EXECUTE format('DROP TRIGGER IF EXISTS " + TRUNCATE_TRIGGER + " ON %s', r);\n"
                + "        EXECUTE format('CREATE TRIGGER " + TRUNCATE_TRIGGER + " BEFORE TRUNCATE ON %s FOR EACH"
                + " STATEMENT EXECUTE FUNCTION " + function + "_truncate()', r);\n"
                + "        EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER " + ROW_TRIGGER + "', r);\n"
                + "        EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER " + TRUNCATE_TRIGGER + "', r);\n"
                + (columns.isEmpty() ? "" : "        EXECUTE format('GRANT SELECT (" + columns + ") ON %s TO "
                + config.fenceRole() + "', r);\n")
                + "    END LOOP;\n"
                + "END $triggers$;\n";
    }

    /**
     * Drops Stockade's triggers from every table the configuration does not name (all of them when
     * {@code keep} is null): what an earlier install with another policy file left.
     */
    private String dropTriggers(@Nullable List<String> keep) {
        String kept = keep == null || keep.isEmpty() ? "" : " AND c.oid NOT IN (SELECT p.relid FROM unnest(ARRAY["
                + String.join(", ", keep.stream().map(t -> "'" + t + "'::regclass").toList())
                + "]) AS k(t), pg_partition_tree(k.t) p)";
        return "DO $drop$ DECLARE r record; BEGIN\n"
                + "    FOR r IN SELECT t.tgname, c.oid::regclass AS tbl FROM pg_trigger t JOIN pg_class c ON c.oid ="
                + " t.tgrelid\n"
                + "             WHERE t.tgname IN ('" + ROW_TRIGGER + "', '" + TRUNCATE_TRIGGER + "') AND NOT"
                + " t.tgisinternal AND t.tgparentid = 0" + kept + " LOOP\n"
                + "        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', r.tgname, r.tbl);\n"
                + "    END LOOP;\n"
                + "END $drop$;\n";
    }

    private String dropOthers() {
        return dropTriggers(config.tables().stream().map(SqlConfig.FencedTable::qualified).toList());
    }

    /** {@code fence_<table>_<8 hex of the qualified name>}: unique per table, within 63 bytes. */
    static String functionName(SqlConfig.FencedTable table) {
        String hash = HexFormat.of().formatHex(hmacKey(table.qualified()), 0, 4);
        String name = table.table().length() > 40 ? table.table().substring(0, 40) : table.table();
        return "fence_" + name + "_" + hash;
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = FenceSql.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IOException(name + " is missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8) + "\n";
        }
    }
}

package io.stockade.proxy.backend.postgres;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import io.stockade.proxy.ProxyFixture;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The postgres example as a newcomer meets it (the first-hour report, defect 3): a fresh database made from the
 * example's own
 * SQL file, the example's policy file as shipped, and the session its comment shows. Its curl used to fail
 * ("the JSON body has no field 'memo'"), then on a missing account row, and a GET of a missing account was 200 [].
 */
class PostgresExampleIT {
    private static final Path EXAMPLES = Path.of("..", "policies", "examples").toAbsolutePath().normalize();

    @TempDir
    Path dir;

    @Test
    void theExamplesSessionWorksOnAFreshDatabase() throws Exception {
        String db = "bank_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        try (Connection admin = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres");
             Statement s = admin.createStatement()) {
            s.execute("CREATE DATABASE " + db);
        }
        try {
            try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:5432/" + db
                    + "?user=postgres"); Statement s = c.createStatement()) {
                s.execute(Files.readString(EXAMPLES.resolve("postgres-accounts.sql")));
            }
            String shipped = Files.readString(EXAMPLES.resolve("postgres-accounts.yaml"));
            String policy = shipped.replace("journal: ./stockade-data/postgres/journal", "journal: ${JOURNAL}");
            assertNotEquals(shipped, policy, "the example's journal line moved: keep this test's data in its dir");
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy,
                    Map.of("PGDATABASE", db, "PGUSER", "postgres", "STOCKADE_PORT", "0"))) {
                Http.Response put = Http.put(proxy.uri("/accounts/acc-1/balance"), "{\"balance\": 120.50}",
                        Map.of("Fencing-Token", "42"));
                assertEquals(200, put.status(), put.body());
                Http.Response read = Http.get(proxy.uri("/accounts/acc-1"));
                assertEquals(200, read.status(), read.body());
                assertTrue(read.body().contains("120.5"), read.body());
                Http.Response missing = Http.get(proxy.uri("/accounts/acc-9"));
                assertEquals(404, missing.status(), missing.body());
                assertTrue(missing.body().contains("not-found"), missing.body());
                Http.Response stale = Http.put(proxy.uri("/accounts/acc-1/balance"), "{\"balance\": 1}",
                        Map.of("Fencing-Token", "41"));
                assertEquals(409, stale.status(), stale.body());
                assertTrue(Http.get(proxy.uri("/accounts/acc-1")).body().contains("120.5"));
            }
        } finally {
            try (Connection admin = DriverManager.getConnection(
                    "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres"); Statement s = admin.createStatement()) {
                s.execute("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)");
            }
        }
    }
}

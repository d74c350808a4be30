package io.stockade.proxy.sql;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.StockadeServer;
import io.stockade.testing.PgCluster;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.SqlClients;
import io.stockade.testing.TestPki;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * TLS on both legs and SCRAM-SHA-256 relayed: a private PostgreSQL that takes TLS sessions only and the application
 * role by SCRAM, the listener with a certificate of its own and the database's CA. psql and pgjdbc verify the
 * listener's certificate; the listener verifies the database's. A client that asks for SCRAM channel binding is told
 * why it cannot have it through the listener; a client without TLS is refused.
 */
@RequiresTools({Tools.Tool.POSTGRES_CLUSTER, Tools.Tool.PSQL})
class SqlTlsIT {
    private static final String PASSWORD = "s3cret-app";
    @TempDir
    static Path dir;
    static PgCluster cluster;
    static SqlDatabase db;
    static StockadeServer proxy;
    static TestPki pki;

    @BeforeAll
    static void start() throws Exception {
        pki = TestPki.create(dir.resolve("pki"));
        cluster = PgCluster.createTls(pki.server("db"), false);
        String server = "jdbc:postgresql://127.0.0.1:" + cluster.port() + "/";
        db = SqlDatabase.create(dir, server, "postgres", PASSWORD);
        Path hba = cluster.data().resolve("pg_hba.conf");
        Files.writeString(hba, "hostssl all " + db.app + " 127.0.0.1/32 scram-sha-256\n" + Files.readString(hba));
        db.execute("SELECT pg_reload_conf()");
        Path keystore = TestPki.keystore(pki.server("listener"), dir.resolve("listener.p12"), "changeit");
        Files.writeString(dir.resolve("keystore.pw"), "changeit\n");
        Path config = db.policyFile("tls.yaml", cluster.port(), "  direct-clients: refuse\n");
        Files.writeString(config, Files.readString(config)
                .replace("listen: {host: 127.0.0.1, port: 0}", "listen: {host: 127.0.0.1, port: 0, tls: {keystore: "
                        + keystore + ", password-file: " + dir.resolve("keystore.pw") + "}}")
                .replace("name: " + db.name + "}", "name: " + db.name + ", tls: {ca: " + pki.ca() + "}}"));
        String[] install = SqlDatabase.command("install", "--config", config.toString(), "--url",
                server + db.name + "?sslmode=require");
        assertEquals("0", install[0], install[2]);
        proxy = StockadeServer.start(PolicyLoader.load(config));
    }

    @AfterAll
    static void stop() throws Exception {
        if (proxy != null) {
            proxy.close();
        }
        if (db != null) {
            db.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    private static String[] psql(String conninfo, String sql) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(SqlClients.psql().toString(), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                "-d", "host=127.0.0.1 port=" + proxy.sql().port() + " dbname=" + db.name + " user=" + db.app
                        + " sslrootcert=" + pki.ca() + " " + conninfo, "-c", sql));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().putAll(Map.of("PGPASSWORD", PASSWORD, "PGCONNECT_TIMEOUT", "10"));
        Path err = Files.createTempFile(dir, "err", ".txt");
        Process p = pb.redirectError(err.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return new String[] {Integer.toString(p.exitValue()), Files.readString(err, StandardCharsets.UTF_8)};
    }

    @Test
    void psqlOverTlsWithScramIsFencedAndChannelBindingIsRefusedWithTheReason() throws Exception {
        String[] holder = psql("sslmode=verify-full channel_binding=disable options='-c stockade.fencing_token=7'",
                "INSERT INTO jobs VALUES (1, 'holder7')");
        assertEquals("0", holder[0], holder[1]);
        String[] zombie = psql("sslmode=verify-full channel_binding=disable options='-c stockade.fencing_token=6'",
                "UPDATE jobs SET state = 'zombie' WHERE id = 1");
        assertTrue(zombie[1].contains("stale fencing token 6"), zombie[1]);
        assertEquals(List.of("holder7"), db.column("SELECT state FROM jobs WHERE id = 1"));
        assertEquals(7L, db.fence("jobs/1"));

        String[] binding = psql("sslmode=verify-full", "SELECT 1");
        assertTrue(binding[1].contains("SCRAM channel binding, which cannot cross the listener"), binding[1]);
        String[] plain = psql("sslmode=disable", "SELECT 1");
        assertTrue(plain[1].contains("this listener takes TLS sessions only"), plain[1]);
        String[] wrongPassword = psql("sslmode=verify-full channel_binding=disable password=wrong", "SELECT 1");
        assertTrue(wrongPassword[1].contains("password authentication failed"), wrongPassword[1]);
    }

    @Test
    void pgjdbcOverTlsWithScram() throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + proxy.sql().port() + "/" + db.name + "?user=" + db.app
                + "&password=" + PASSWORD + "&sslmode=verify-full&sslrootcert=" + pki.ca() + "&channelBinding=disable"
                + "&options=-c%20stockade.fencing_token=";
        try (Connection c = DriverManager.getConnection(url + "9"); Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO jobs VALUES (2, 'holder9')");
        }
        try (Connection c = DriverManager.getConnection(url + "8"); Statement s = c.createStatement()) {
            assertEquals("SF409", assertThrows(SQLException.class,
                    () -> s.executeUpdate("UPDATE jobs SET state = 'zombie' WHERE id = 2")).getSQLState());
        }
        assertEquals(List.of("holder9"), db.column("SELECT state FROM jobs WHERE id = 2"));
        assertEquals(9L, db.fence("jobs/2"));
    }
}

package io.stockade.client;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The PostgreSQL provider against the real server (127.0.0.1:5432, database test). */
class PostgresLeaseIT {

    static final String URL = System.getProperty("stockade.test.jdbc",
            "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");

    private static LeaseProvider a;
    private static LeaseProvider b;

    @BeforeAll
    static void start() {
        a = Leases.newBuilder().holderIdentity("a").postgres(URL);
        b = Leases.newBuilder().holderIdentity("b").postgres(URL);
    }

    @AfterAll
    static void stop() {
        a.close();
        b.close();
    }

    private static String name() {
        return "pg-" + UUID.randomUUID();
    }

    @Test
    void acquireContendReleaseAndTokensStrictlyIncreaseAcrossHolders() throws Exception {
        String name = name();
        Lease first = a.acquire(name, Duration.ofSeconds(5), Duration.ofSeconds(5));
        assertEquals(1, first.token());
        assertThrows(TimeoutException.class, () -> b.acquire(name, Duration.ofSeconds(5), Duration.ofMillis(500)));
        first.close();
        Lease second = b.acquire(name, Duration.ofSeconds(5), Duration.ofSeconds(5));
        assertEquals(2, second.token());
        second.close();
        try (Lease third = a.acquire(name, Duration.ofSeconds(5), Duration.ofSeconds(5))) {
            assertEquals(3, third.token());
        }
    }

    @Test
    void theWatchdogRenewsPastTheTtl() throws Exception {
        String name = name();
        try (Lease lease = a.acquire(name, Duration.ofSeconds(1), Duration.ofSeconds(5))) {
            Thread.sleep(2500);
            assertTrue(lease.isValid(), "renewed: " + lease.lossReason());
            assertThrows(TimeoutException.class, () -> b.acquire(name, Duration.ofSeconds(1), Duration.ofMillis(300)));
        }
    }

    @Test
    void anExpiredLeaseIsTakenByAnotherHolderAndTheFirstHearsRenewalRefused() throws Exception {
        String name = name();
        Lease first = a.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(5));
        CompletableFuture<LossReason> heard = new CompletableFuture<>();
        first.addListener((l, r) -> heard.complete(r));
        // the database clock decides: move the row's expiry into the past, as if the holder had stopped renewing
        try (Connection c = DriverManager.getConnection(URL);
             PreparedStatement ps = c.prepareStatement(
                     "UPDATE stockade_leases SET expires_at = now() - interval '1 second' WHERE name = ?")) {
            ps.setString(1, name);
            ps.executeUpdate();
        }
        try (Lease second = b.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(1))) {
            assertTrue(second.token() > first.token());
            assertEquals(LossReason.RENEWAL_REFUSED, heard.get(3, TimeUnit.SECONDS));
            assertThrows(LeaseLostException.class, () -> first.checkpoint(Duration.ZERO));
        }
        first.close();
        try (Lease again = a.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(5))) {
            assertEquals(3, again.token(), "re-acquiring after a loss gets a new token");
        }
    }

    @Test
    void aDeletedRowIsReportedAsRevoked() throws Exception {
        String name = name();
        Lease lease = a.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(5));
        CompletableFuture<LossReason> heard = new CompletableFuture<>();
        lease.addListener((l, r) -> heard.complete(r));
        try (Connection c = DriverManager.getConnection(URL);
             PreparedStatement ps = c.prepareStatement("DELETE FROM stockade_leases WHERE name = ?")) {
            ps.setString(1, name);
            ps.executeUpdate();
        }
        assertEquals(LossReason.REVOKED, heard.get(3, TimeUnit.SECONDS));
        lease.close();
    }

    @Test
    void releaseNeverTouchesALaterHoldersRow() throws Exception {
        String name = name();
        Lease first = a.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(5));
        try (Connection c = DriverManager.getConnection(URL);
             PreparedStatement ps = c.prepareStatement(
                     "UPDATE stockade_leases SET expires_at = now() - interval '1 second' WHERE name = ?")) {
            ps.setString(1, name);
            ps.executeUpdate();
        }
        try (Lease second = b.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(1))) {
            first.close(); // token 1's release must not free token 2's lease
            assertThrows(TimeoutException.class, () -> a.acquire(name, Duration.ofSeconds(3), Duration.ofMillis(300)));
            assertTrue(second.isValid());
        }
    }

    @Test
    void transactionLevelAdvisoryLocksExcludeEachOtherAndEndWithTheTransaction() throws Exception {
        try (Connection one = DriverManager.getConnection(URL); Connection two = DriverManager.getConnection(URL)) {
            String lock = "advisory-" + UUID.randomUUID();
            boolean otherCouldLock = PostgresLocks.inTransactionLock(one, lock, c -> {
                two.setAutoCommit(false);
                try {
                    return PostgresLocks.tryTransactionLock(two, lock);
                } finally {
                    two.rollback();
                }
            });
            assertFalse(otherCouldLock);
            two.setAutoCommit(false);
            assertTrue(PostgresLocks.tryTransactionLock(two, lock), "released by the commit");
            two.rollback();
            two.setAutoCommit(true);
            assertThrows(IllegalStateException.class, () -> PostgresLocks.tryTransactionLock(two, lock));
            // the two sessions' locks only: other tests (the proxy's schema migration) take advisory locks too
            try (PreparedStatement ps = one.prepareStatement("SELECT count(*) FROM pg_locks WHERE locktype = "
                    + "'advisory' AND pid IN (pg_backend_pid(), " + backendPid(two) + ")");
                 ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertEquals(0, rs.getInt(1), "no advisory lock left behind on a pooled connection");
            }
        }
    }

    private static int backendPid(Connection c) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_backend_pid()"); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }
}

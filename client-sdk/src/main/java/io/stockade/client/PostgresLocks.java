package io.stockade.client;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Objects;

/**
 * Transaction-level PostgreSQL advisory locks ({@code pg_advisory_xact_lock}): held until the transaction ends,
 * released by COMMIT or ROLLBACK, never left behind on a pooled connection.
 *
 * <p>Why not session-level locks ({@code pg_advisory_lock})? They belong to the server session. Behind PgBouncer in
 * transaction pooling mode, consecutive transactions of one client run on different server sessions: the unlock
 * goes to a session that does not hold the lock (it stays held, by whichever client gets that session next), and
 * another client's transaction may run on the session that holds it and believe it has the lock too. A
 * transaction-level lock lives exactly as long as the transaction, which is the unit PgBouncer keeps on one session.
 *
 * <p>An advisory lock gives mutual exclusion between transactions of one database; it is not a lease and has no
 * token. For writes to other storage, use a {@link Lease} and its token.
 */
public final class PostgresLocks {

    /**
     * Work done in the locked transaction.
     *
     * @param <T> the result type
     */
    @FunctionalInterface
    public interface Work<T> {
        /**
         * Runs in the transaction that holds the lock.
         *
         * @param connection the connection, in a transaction (do not commit or roll back)
         * @return the result
         * @throws SQLException to roll back
         */
        T run(Connection connection) throws SQLException;
    }

    private PostgresLocks() {
    }

    /**
     * Runs {@code work} in one transaction that first takes {@code pg_advisory_xact_lock} on {@code lockName}
     * (hashed with {@code hashtextextended}), waiting while another transaction holds it; commits, or rolls back if
     * {@code work} throws. Restores the connection's auto-commit mode. Until then the connection sends unnamed
     * statements only ({@link PostgresPooling#unnamed}): the lock, the work's statements, COMMIT and ROLLBACK are
     * safe behind PgBouncer in transaction pooling whatever the connection's {@code prepareThreshold}.
     *
     * @param connection a connection not already in a transaction
     * @param lockName   the lock's name
     * @param work       the work
     * @param <T>        the result type
     * @return what {@code work} returned
     * @throws SQLException if the lock, the work or the commit failed (after rolling back)
     */
    public static <T> T inTransactionLock(Connection connection, String lockName, Work<T> work) throws SQLException {
        Objects.requireNonNull(lockName, "lockName");
        Objects.requireNonNull(work, "work");
        boolean auto = connection.getAutoCommit();
        // unnamed statements (COMMIT and ROLLBACK too) until the transaction is over: safe behind PgBouncer
        PostgresPooling.Unnamed unnamed = PostgresPooling.unnamed(connection);
        connection.setAutoCommit(false);
        try {
            try (PreparedStatement ps = connection.prepareStatement(
                    "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))")) {
                ps.setString(1, lockName);
                ps.execute();
            }
            T result = work.run(connection);
            connection.commit();
            return result;
        } catch (SQLException | RuntimeException | Error e) {
            try {
                connection.rollback();
            } catch (SQLException r) {
                e.addSuppressed(r);
            }
            throw e;
        } finally {
            try {
                connection.setAutoCommit(auto);
            } finally {
                unnamed.close();
            }
        }
    }

    /**
     * Tries {@code pg_try_advisory_xact_lock} on {@code lockName} in the connection's current transaction.
     *
     * @param connection a connection with auto-commit off (in auto-commit mode the lock would end with the
     *                   statement)
     * @param lockName   the lock's name
     * @return {@code true} if this transaction now holds the lock, {@code false} if another one does
     * @throws SQLException          if the query failed
     * @throws IllegalStateException if the connection is in auto-commit mode
     */
    public static boolean tryTransactionLock(Connection connection, String lockName) throws SQLException {
        if (connection.getAutoCommit()) {
            throw new IllegalStateException("a transaction-level lock needs a transaction: turn auto-commit off");
        }
        try (PostgresPooling.Unnamed unnamed = PostgresPooling.unnamed(connection);
             PreparedStatement ps = connection.prepareStatement(
                "SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))")) {
            ps.setString(1, lockName);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }
}

package io.stockade.proxy.sql.session;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import javax.net.ssl.SSLContext;

import io.stockade.policy.SqlConfig;
import io.stockade.proxy.sql.statement.Statements;

import org.jspecify.annotations.Nullable;

/**
 * What every session of one listener shares.
 *
 * @param config     the {@code sql} section
 * @param clientTls  TLS towards clients, or {@code null}
 * @param clientAuth whether clients must (or may) present a certificate
 * @param serverTls  TLS towards the database, or {@code null}
 * @param statements the recogniser of token statements and refusals
 * @param gate       the token's verification and proof
 * @param outcomes   where transactions are counted and logged
 * @param connect    how long connecting to the database may take
 */
public record SessionContext(SqlConfig config, @Nullable SSLContext clientTls, ClientAuth clientAuth,
                             @Nullable SSLContext serverTls, Statements statements, TokenGate gate,
                             Outcomes outcomes, Duration connect) {
    public SessionContext {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(statements, "statements");
        Objects.requireNonNull(gate, "gate");
        Objects.requireNonNull(outcomes, "outcomes");
        Objects.requireNonNull(connect, "connect");
    }

    /** Client certificates. */
    public enum ClientAuth { NONE, OPTIONAL, REQUIRED }

    /** Where a session reports its transactions. */
    public interface Outcomes {
        /**
         * A transaction ended that carried a token or met the fence.
         *
         * @param session  the session's description (id, user, database, client address)
         * @param outcome  accepted, stale, too_far, missing, unverified, unavailable, malformed, refused,
         *                 rolled_back
         * @param token    the token in force, or {@code null}
         * @param error    the fields of the error that decided it ('C' code, 'M' message, 'D' detail), or empty
         */
        void transaction(Map<String, String> session, String outcome, @Nullable Long token,
                         Map<Character, String> error);

        /** A session began (+1) or ended (-1). */
        void sessions(int delta);
    }
}

package io.stockade.proxy.sql.session;

import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.jspecify.annotations.Nullable;

/**
 * What the listener knows of the token in force on its server session, and of how each transaction ended, from the
 * messages it relayed. A token statement the client sent is a mark, tied to the ReadyForQuery that ends the message
 * (or the Sync) it came in; the server's answers say how the transaction ended:
 * <ul>
 *   <li>committed when its last command completed and no error came after it, unless that command was a
 *   {@code ROLLBACK} (also the answer to a {@code COMMIT} of a failed transaction); {@code PREPARE TRANSACTION}
 *   is "prepared", not committed: another session may still roll it back;</li>
 *   <li>a session's token ({@code SET}, {@code RESET}, {@code RESET ALL}, {@code DISCARD ALL}) set in a transaction
 *   holds afterwards only when that transaction committed (or was prepared), as PostgreSQL keeps it; a
 *   transaction's ({@code SET LOCAL}) ends with it;</li>
 *   <li>a session that ends with a message unanswered leaves that transaction's outcome unknown, one that ends inside
 *   a transaction rolled it back.</li>
 * </ul>
 * SQL the recogniser does not see (a function, a {@code DO} block, {@code ROLLBACK TO SAVEPOINT} of a savepoint a
 * token was set in) can still change the setting unknown to the listener: the token logged is the one the listener
 * last saw take effect, and the trigger judges each row by what is in force (its errors name that token).
 * Marks come from the client side's thread, answers from the server side's.
 */
final class Transactions {
    /** A token statement: a session's token set or reset, a transaction's set, or every setting reset. */
    enum Kind { SESSION, LOCAL, RESET_ALL }

    private record Mark(long ordinal, Kind kind, @Nullable Long token) {
    }

    /**
     * A transaction that ended and carried a token or met the fence.
     *
     * @param outcome accepted, prepared, rolled_back, unknown, or the fence's (stale, too_far, ...)
     * @param token   the token in force as far as the listener knows, or {@code null}
     * @param error   the fence's error fields, or empty
     */
    record Ended(String outcome, @Nullable Long token, Map<Character, String> error) {
    }

    private final ConcurrentLinkedQueue<Mark> marks = new ConcurrentLinkedQueue<>();
    private @Nullable Long committed;
    private boolean pendingSet;
    private @Nullable Long pending;
    private @Nullable Long local;
    private @Nullable Map<Character, String> fenceError;
    private boolean errorAfterTag;
    private @Nullable String lastTag;
    private char status = 'I';
    private long readies;

    /** @param sessionToken the session's token set at startup, or {@code null} */
    Transactions(@Nullable Long sessionToken) {
        this.committed = sessionToken;
    }

    /** A token statement relayed, to take effect with the ReadyForQuery numbered {@code ordinal}. */
    void mark(long ordinal, Kind kind, @Nullable Long token) {
        marks.add(new Mark(ordinal, kind, token));
    }

    /** An ErrorResponse from the server. */
    synchronized void error(Map<Character, String> fields) {
        String code = fields.getOrDefault('C', "");
        if (code.startsWith("SF") && fenceError == null) {
            fenceError = fields;
        }
        errorAfterTag = true;
    }

    /** A CommandComplete's tag. */
    synchronized void completed(String tag) {
        lastTag = tag;
        errorAfterTag = false;
    }

    /** A query the server ignored (in a failed pipeline, before its Sync): its ReadyForQuery never comes. */
    synchronized void skipped() {
        readies++;
    }

    /**
     * A ReadyForQuery from the server.
     *
     * @return the transaction it ended, when it ended one that carried a token or met the fence, else {@code null}
     */
    synchronized @Nullable Ended ready(char transactionStatus) {
        readies++;
        status = transactionStatus;
        for (Mark m = marks.peek(); m != null && m.ordinal() <= readies; m = marks.peek()) {
            marks.poll();
            switch (m.kind()) {
                case SESSION -> {
                    pendingSet = true;
                    pending = m.token();
                }
                case LOCAL -> local = m.token();
                case RESET_ALL -> {
                    pendingSet = true;
                    pending = null;
                    local = null;
                }
            }
        }
        if (transactionStatus != 'I') {
            return null;
        }
        Long token = inForce();
        String outcome;
        if (errorAfterTag || "ROLLBACK".equals(lastTag)) {
            outcome = "rolled_back";
        } else {
            outcome = "PREPARE TRANSACTION".equals(lastTag) ? "prepared" : "accepted";
            if (pendingSet) {
                committed = pending;
            }
        }
        Map<Character, String> fence = fenceError;
        pendingSet = false;
        pending = null;
        local = null;
        fenceError = null;
        errorAfterTag = false;
        lastTag = null;
        if (fence != null) {
            return new Ended(Relay.outcomeOf(fence.getOrDefault('C', "")), token, fence);
        }
        return token == null ? null : new Ended(outcome, token, Map.of());
    }

    /**
     * The session ended (either side closed it).
     *
     * @param asked the ReadyForQuery answers the client's messages called for
     * @return the transaction it cut short, when one carried a token, else {@code null}
     */
    synchronized @Nullable Ended lost(long asked) {
        Long token = inForce();
        for (Mark m : marks) {
            token = m.kind() == Kind.RESET_ALL ? token : m.token(); // sent, never answered
        }
        if (token == null) {
            return null;
        }
        if (readies < asked) {
            return new Ended("unknown", token, Map.of());
        }
        return status == 'I' ? null : new Ended("rolled_back", token, Map.of());
    }

    private @Nullable Long inForce() {
        if (local != null) {
            return local;
        }
        return pendingSet ? pending : committed;
    }
}

package io.stockade.proxy.sql.session;

/**
 * What the listener decided about a token a client set: taken (its value for the database), or refused with a
 * SQLSTATE and a message.
 */
sealed interface Verdict {
    record Taken(long token, String value) implements Verdict {
    }

    record Refused(String code, String message) implements Verdict {
    }
}

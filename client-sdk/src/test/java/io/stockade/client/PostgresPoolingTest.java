package io.stockade.client;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The URL every SDK connection to PostgreSQL is opened with: prepareThreshold=0 last, whatever was given. */
class PostgresPoolingTest {
    @Test
    void prepareThresholdIsZeroAndLastWhateverTheUrlSays() {
        assertEquals("jdbc:postgresql://h:5432/app?prepareThreshold=0",
                PostgresPooling.url("jdbc:postgresql://h:5432/app"));
        assertEquals("jdbc:postgresql://h/app?user=u&prepareThreshold=0",
                PostgresPooling.url("jdbc:postgresql://h/app?user=u&prepareThreshold=5"));
        assertEquals("jdbc:postgresql://h/app?ssl=true&user=u&prepareThreshold=0",
                PostgresPooling.url("jdbc:postgresql://h/app?prepareThreshold=-1&ssl=true&PREPARETHRESHOLD=3&user=u"));
        // percent-encoded, as pgjdbc decodes it
        assertEquals("jdbc:postgresql://h/app?prepareThreshold=0",
                PostgresPooling.url("jdbc:postgresql://h/app?prepare%54hreshold=5"));
        assertEquals("jdbc:postgresql://h/app?a=1&prepareThreshold=0",
                PostgresPooling.url("jdbc:postgresql://h/app?a=1&"));
        // another driver's URL is left alone
        assertEquals("jdbc:h2:mem:x", PostgresPooling.url("jdbc:h2:mem:x"));
    }

    /** pgjdbc names every statement when the JVM forces binary transfer: refused, naming the property. */
    @Test
    void aJvmForcingBinaryTransferIsRefused() {
        System.setProperty("org.postgresql.forceBinary", "true");
        try {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> PostgresPooling.url("jdbc:postgresql://h/app"));
            assertTrue(e.getMessage().contains("-Dorg.postgresql.forceBinary=true"), e.getMessage());
        } finally {
            System.clearProperty("org.postgresql.forceBinary");
        }
    }
}

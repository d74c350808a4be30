package io.stockade.proxy.postgres;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The URL the proxy's pools open: prepareThreshold=0 last, whatever the policy's URL says. */
class PostgresPoolsTest {
    @Test
    void prepareThresholdIsZeroAndLastWhateverThePolicysUrlSays() throws Exception {
        assertEquals("jdbc:postgresql://h:5432/app?prepareThreshold=0",
                PostgresPools.unnamedStatements("jdbc:postgresql://h:5432/app"));
        assertEquals("jdbc:postgresql://h/app?user=u&prepareThreshold=0",
                PostgresPools.unnamedStatements("jdbc:postgresql://h/app?user=u&prepareThreshold=5"));
        assertEquals("jdbc:postgresql://h/app?ssl=true&user=u&prepareThreshold=0", PostgresPools.unnamedStatements(
                "jdbc:postgresql://h/app?prepareThreshold=-1&ssl=true&PREPARETHRESHOLD=3&user=u"));
        assertEquals("jdbc:postgresql://h/app?prepareThreshold=0",
                PostgresPools.unnamedStatements("jdbc:postgresql://h/app?prepare%54hreshold=5"));
    }

    /** The threshold a connection found direct runs with: the URL's, else pgjdbc's default. */
    @Test
    void aDirectConnectionRunsWithTheUrlsThresholdOrPgjdbcsDefault() {
        assertEquals(5, PostgresPools.namedThreshold("jdbc:postgresql://h:5432/app"));
        assertEquals(5, PostgresPools.namedThreshold("jdbc:postgresql://h:5432/app?ssl=true"));
        assertEquals(1, PostgresPools.namedThreshold("jdbc:postgresql://h/app?user=u&prepareThreshold=1"));
        assertEquals(0, PostgresPools.namedThreshold("jdbc:postgresql://h/app?prepare%54hreshold=0&ssl=true"));
        assertEquals(5, PostgresPools.namedThreshold("jdbc:postgresql://h/app?prepareThreshold=many"));
    }

    /** pgjdbc names every statement when the JVM forces binary transfer: refused at start, naming the property. */
    @Test
    void aJvmForcingBinaryTransferIsRefused() {
        System.setProperty("org.postgresql.forceBinary", "true");
        try {
            java.io.IOException e = assertThrows(java.io.IOException.class,
                    () -> PostgresPools.unnamedStatements("jdbc:postgresql://h/app"));
            assertTrue(e.getMessage().contains("-Dorg.postgresql.forceBinary=true"), e.getMessage());
        } finally {
            System.clearProperty("org.postgresql.forceBinary");
        }
    }
}

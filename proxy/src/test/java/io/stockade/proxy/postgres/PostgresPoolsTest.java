package io.stockade.proxy.postgres;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}

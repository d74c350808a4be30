package io.stockade.testing;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FreePortsTest {
    /** Where Linux's ephemeral range starts by default ({@code ip_local_port_range}). */
    private static final int EPHEMERAL_START = 32_768;

    @Test
    void eachForkHasItsOwnBlockBelowTheEphemeralRange() {
        assertEquals(0, FreePorts.block(null));
        assertEquals(0, FreePorts.block(""));
        assertEquals(1, FreePorts.block("1"));
        assertEquals(11, FreePorts.block("11"));
        assertEquals(0, FreePorts.block("12"), "wraps round rather than reach the ephemeral range");
        assertTrue(FreePorts.BASE + FreePorts.BLOCK * FreePorts.BLOCKS <= EPHEMERAL_START,
                "the last block ends below the ephemeral range");
        assertThrows(IllegalStateException.class, () -> FreePorts.block("one"));
    }

    /**
     * Under Maven (surefire or failsafe) the fork's number must arrive, or every fork takes block 0 and two hand out
     * the same ports (it once arrived empty, through systemPropertyVariables, and a "dead" upstream port of one fork
     * was another fork's live server).
     */
    @Test
    void underMavenTheForkNumberArrives() {
        org.junit.jupiter.api.Assumptions.assumeTrue(System.getProperty("surefire.real.class.path") != null
                || System.getProperty("surefire.test.class.path") != null, "not run by surefire or failsafe");
        String fork = System.getProperty("stockade.test.fork");
        assertTrue(fork != null && fork.strip().matches("[1-9][0-9]*"), "stockade.test.fork: '" + fork + "'");
    }

    @Test
    void portsComeInTurnFromThisJvmsBlockAndATakenOneIsPassedOver() throws Exception {
        int low = FreePorts.BASE + FreePorts.BLOCK * FreePorts.block(System.getProperty("stockade.test.fork"));
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < 20; i++) {
            int p = FreePorts.next();
            assertTrue(p >= low && p < low + FreePorts.BLOCK, p + " outside " + low + "+" + FreePorts.BLOCK);
            assertTrue(seen.add(p), "handed out twice in 20: " + p);
        }
        int last = FreePorts.next();
        int following = low + (last - low + 1) % FreePorts.BLOCK;
        try (ServerSocket taken = new ServerSocket(following, 1, InetAddress.getLoopbackAddress())) {
            int after = FreePorts.next();
            assertNotEquals(taken.getLocalPort(), after, "a port something listens on is passed over");
            try (ServerSocket s = new ServerSocket(after, 1, InetAddress.getLoopbackAddress())) {
                assertEquals(after, s.getLocalPort(), "the port handed out can be bound");
            }
        }
    }
}

package io.stockade.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

/**
 * Free loopback ports for servers that must be told their port up front (a child proxy's config, etcd, Redis,
 * PgBouncer), and ports where nothing listens (an upstream that is down).
 *
 * <p>A port chosen by binding port 0 and closing comes from the kernel's ephemeral range, where it can be taken
 * between choosing and binding: by an outgoing connection's local port, or by another test JVM choosing the same way
 * (the test JVMs of a module run side by side). So the ports come from below the ephemeral range (Linux's
 * {@code ip_local_port_range} starts at 32768), from a block of {@value #BLOCK} ports per test JVM: failsafe and
 * surefire number their forks ({@code stockade.test.fork}, set in the root pom; 0 outside them), and no two JVMs
 * of one run share a block. Within its block a JVM hands the ports out in turn, each checked free when handed out,
 * so a port a test has just let go is not handed out again at once.
 */
public final class FreePorts {
    /** The first port of block 0. */
    static final int BASE = 20_000;
    /** Ports per block. */
    static final int BLOCK = 1_000;
    /** Blocks: up to 12 JVMs (block 12 would reach 33000, inside the ephemeral range). */
    static final int BLOCKS = 12;

    private static final int FIRST = BASE + BLOCK * forkBlock();
    private static int next;

    private FreePorts() {
    }

    /**
     * This JVM's block. In a surefire or failsafe fork the number must have arrived: without it every fork would
     * take block 0 and two would hand out the same ports (it once arrived empty, and a test's "dead" port was the
     * other fork's live server).
     */
    private static int forkBlock() {
        String fork = System.getProperty("stockade.test.fork");
        if ((fork == null || fork.isBlank()) && System.getProperty("surefire.real.class.path") != null) {
            throw new IllegalStateException("stockade.test.fork is not set in this surefire/failsafe fork: the root"
                    + " pom's argLine gives it (-Dstockade.test.fork=${surefire.forkNumber})");
        }
        return block(fork);
    }

    /** The block of a fork number (failsafe's start at 1); blank or absent: 0. */
    static int block(String fork) {
        if (fork == null || fork.isBlank()) {
            return 0;
        }
        try {
            return Math.floorMod(Integer.parseInt(fork.strip()), BLOCKS);
        } catch (NumberFormatException e) {
            throw new IllegalStateException("stockade.test.fork is not a number: '" + fork + "'", e);
        }
    }

    /** A TCP port of this JVM's block that was free on {@code 127.0.0.1} a moment ago. */
    public static synchronized int next() {
        for (int tried = 0; tried < BLOCK; tried++) {
            int port = FIRST + next;
            next = (next + 1) % BLOCK;
            if (free(port)) {
                return port;
            }
        }
        throw new IllegalStateException("no free port in " + FIRST + "-" + (FIRST + BLOCK - 1));
    }

    private static boolean free(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}

package io.stockade.proxy.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.IntPredicate;

/**
 * TCP connections of this host as the kernel lists them ({@code /proc/net/tcp} and {@code tcp6}), so a test can
 * count the connections a server still has open: a leaked client connection shows as an ESTABLISHED socket on the
 * server's side long after the request ended.
 */
public final class OpenSockets {
    private static final String ESTABLISHED = "01";

    private OpenSockets() {
    }

    /** ESTABLISHED connections whose local port is {@code port} (the server's side of each accepted connection). */
    public static int establishedOn(int port) {
        return count(local -> local == port);
    }

    /** Waits until at most {@code max} connections are ESTABLISHED on {@code port}; answers the last count. */
    public static int awaitAtMost(int port, int max, Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        int now = establishedOn(port);
        while (now > max && System.nanoTime() < end) {
            Thread.sleep(50);
            now = establishedOn(port);
        }
        return now;
    }

    private static int count(IntPredicate localPort) {
        int n = 0;
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            List<String> lines;
            try {
                lines = Files.readAllLines(Path.of(table));
            } catch (NoSuchFileException absent) {
                continue;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            for (String line : lines.subList(1, lines.size())) {
                // sl local_address rem_address st ...; an address is HEXIP:HEXPORT
                String[] f = line.trim().split("\\s+");
                String local = f[1];
                int port = Integer.parseInt(local.substring(local.indexOf(':') + 1), 16);
                if (f[3].equals(ESTABLISHED) && localPort.test(port)) {
                    n++;
                }
            }
        }
        return n;
    }
}

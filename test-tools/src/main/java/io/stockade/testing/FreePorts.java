package io.stockade.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/**
 * Free loopback ports for servers that must be told their port up front (a child proxy's config, etcd).
 * The port is free when returned; another process may take it before it is bound, so prefer port 0 where the
 * server can report its port.
 */
public final class FreePorts {

    private FreePorts() {
    }

    /** A TCP port that was free on {@code 127.0.0.1} a moment ago. */
    public static int next() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port", e);
        }
    }
}

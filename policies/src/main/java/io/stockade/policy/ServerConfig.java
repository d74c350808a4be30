package io.stockade.policy;

import java.util.Objects;

/**
 * Where the proxy listens.
 *
 * @param host interface address to bind, e.g. {@code 127.0.0.1}
 * @param port TCP port, 0 for any free port
 */
public record ServerConfig(String host, int port) {
    public static final String DEFAULT_HOST = "127.0.0.1";
    public static final int DEFAULT_PORT = 8080;

    public ServerConfig {
        Objects.requireNonNull(host, "host");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, was " + port);
        }
    }
}

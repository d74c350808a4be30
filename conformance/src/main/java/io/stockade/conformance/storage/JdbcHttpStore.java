package io.stockade.conformance.storage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import io.stockade.client.PostgresPooling;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.jspecify.annotations.Nullable;

/**
 * The paired control's way into a SQL database: a plain HTTP shim with no fencing at all. {@code PUT /<key>} runs
 * the configured statement over JDBC with the key as its first {@code ?} and the request body (UTF-8 text) as its
 * second, on a fresh autocommit connection per request, and answers 204 (or 500 when the statement fails). Every
 * write lands, exactly as the same upsert would land from a client that talks to the database without Stockade.
 * Writers speak HTTP (they are separate processes behind fault-injecting TCP proxies), hence the shim. Loopback
 * only.
 */
public final class JdbcHttpStore implements AutoCloseable {

    private final HttpServer server;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final String url;
    private final @Nullable String user;
    private final @Nullable String password;
    private final String sql;

    private JdbcHttpStore(String url, @Nullable String user, @Nullable String password, String sql)
            throws IOException {
        this.url = PostgresPooling.url(url);  // unnamed statements only: safe behind PgBouncer
        this.user = user;
        this.password = password;
        this.sql = sql;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 256);
        server.setExecutor(executor);
        server.createContext("/", this::handle);
        server.start();
    }

    /**
     * Serves {@code PUT /<key>} on an ephemeral loopback port; {@code sql} is one statement with two {@code ?}:
     * the key, then the body, e.g. {@code insert into docs (id, body) values (?, ?) on conflict (id) do update set
     * body = excluded.body}.
     */
    public static JdbcHttpStore start(String url, @Nullable String user, @Nullable String password, String sql) {
        try {
            return new JdbcHttpStore(url, user, password, sql);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the JDBC control shim", e);
        }
    }

    /** {@code http://127.0.0.1:PORT}, no trailing slash; write to {@code /{key}}. */
    public URI baseUri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getPath();
            if (path.length() < 2) {
                ex.sendResponseHeaders(400, -1);
                return;
            }
            if (!ex.getRequestMethod().equals("PUT")) {
                ex.sendResponseHeaders(405, -1);
                return;
            }
            String key = path.substring(1);
            String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            try (Connection c = DriverManager.getConnection(url, user, password);
                 PreparedStatement st = c.prepareStatement(sql)) {
                st.setQueryTimeout(10);
                st.setString(1, key);
                st.setString(2, body);
                st.executeUpdate();
            } catch (SQLException e) {
                byte[] msg = ("control statement failed: " + e.getMessage()).getBytes(StandardCharsets.UTF_8);
                ex.sendResponseHeaders(500, msg.length);
                ex.getResponseBody().write(msg);
                return;
            }
            ex.sendResponseHeaders(204, -1);
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}

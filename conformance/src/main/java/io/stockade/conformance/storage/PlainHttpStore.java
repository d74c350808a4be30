package io.stockade.conformance.storage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * A plain HTTP storage over a directory, with no fencing at all: {@code PUT /a/b} writes {@code root/a/b} (temp file
 * and atomic rename), {@code GET} reads it, {@code DELETE} removes it. The suite uses it as the paired control's
 * way into a directory (every write lands, as on any storage that does not check tokens), and CI uses it as the
 * HTTP upstream behind the proxy. Loopback only; paths with {@code ..} are refused.
 */
public final class PlainHttpStore implements AutoCloseable {

    private final HttpServer server;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final Path root;

    private PlainHttpStore(Path root) throws IOException {
        this.root = root.toAbsolutePath();
        Files.createDirectories(this.root);
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 256);
        server.setExecutor(executor);
        server.createContext("/", this::handle);
        server.start();
    }

    /** Serves {@code root} on an ephemeral loopback port. */
    public static PlainHttpStore start(Path root) {
        try {
            return new PlainHttpStore(root);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the plain store on " + root, e);
        }
    }

    /** {@code http://127.0.0.1:PORT}, no trailing slash. */
    public URI baseUri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    public Path root() {
        return root;
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getPath();
            if (path.contains("..") || path.length() < 2) {
                ex.sendResponseHeaders(400, -1);
                return;
            }
            Path file = root.resolve(path.substring(1));
            switch (ex.getRequestMethod()) {
                case "GET" -> {
                    byte[] body;
                    try {
                        body = Files.readAllBytes(file);
                    } catch (NoSuchFileException e) {
                        ex.sendResponseHeaders(404, -1);
                        return;
                    }
                    ex.sendResponseHeaders(200, body.length == 0 ? -1 : body.length);
                    ex.getResponseBody().write(body);
                }
                case "PUT" -> {
                    byte[] body = ex.getRequestBody().readAllBytes();
                    Files.createDirectories(file.getParent());
                    Path tmp = Files.createTempFile(file.getParent(), ".put-", ".tmp");
                    Files.write(tmp, body);
                    boolean existed = Files.exists(file);
                    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                    ex.sendResponseHeaders(existed ? 204 : 201, -1);
                }
                case "DELETE" -> ex.sendResponseHeaders(Files.deleteIfExists(file) ? 204 : 404, -1);
                default -> ex.sendResponseHeaders(405, -1);
            }
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}

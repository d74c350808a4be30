package io.stockade.proxy.testing;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import com.sun.net.httpserver.HttpServer;

/**
 * A stand-in for the proxy's Main, used only to test test-tools' {@link io.stockade.testing.ChildProxy}. Reads
 * {@code --config FILE}; the file's first line picks the behaviour: {@code serve} (an HTTP server answering
 * {@code fake} on every path, then the readiness line), {@code crash} (prints lines and exits with 3) or
 * {@code silent} (never gets ready).
 */
public final class FakeProxyMain {

    private FakeProxyMain() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !args[0].equals("--config")) {
            System.err.println("usage: --config FILE");
            System.exit(2);
        }
        String mode = Files.readAllLines(Path.of(args[1])).getFirst().trim();
        switch (mode) {
            case "serve" -> {
                HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
                server.createContext("/", ex -> {
                    byte[] body = ("fake " + ProcessHandle.current().pid()).getBytes(StandardCharsets.UTF_8);
                    ex.sendResponseHeaders(200, body.length);
                    ex.getResponseBody().write(body);
                    ex.close();
                });
                server.start();
                Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("fake: shutdown hook ran")));
                System.out.println("fake: starting with jvm arg stockade.test=" + System.getProperty("stockade.test"));
                System.out.println("Stockade listening on http://127.0.0.1:" + server.getAddress().getPort());
                Thread.sleep(Long.MAX_VALUE);
            }
            case "crash" -> {
                for (int i = 1; i <= 60; i++) {
                    System.out.println("fake: line " + i);
                }
                System.err.println("fake: config is broken");
                System.exit(3);
            }
            case "silent" -> Thread.sleep(Long.MAX_VALUE);
            default -> throw new IllegalArgumentException("unknown mode " + mode);
        }
    }
}

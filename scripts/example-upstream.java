// A small HTTP store for the examples (scripts/example.sh): PUT stores the body, GET/HEAD read it, DELETE removes
// it, each version with an ETag; If-Match and If-None-Match are honoured atomically (412 otherwise), as the
// examples' `conditional: if-match` policies expect. In memory, loopback only. Not a production store.
//
//   java scripts/example-upstream.java PORT [PORT...]     one store per port, every path a resource
//
// It prints "example-upstream listening on http://127.0.0.1:PORT" for each port, then serves until killed.

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

public class ExampleUpstream {
    record Version(byte[] body, String etag) {
    }

    public static void main(String[] args) throws IOException {
        if (args.length == 0) {
            System.err.println("usage: java scripts/example-upstream.java PORT [PORT...]");
            System.exit(2);
        }
        for (String port : args) {
            Map<String, Version> store = new HashMap<>();
            AtomicLong versions = new AtomicLong();
            HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                    Integer.parseInt(port)), 64);
            server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
            server.createContext("/", ex -> serve(ex, store, versions));
            server.start();
            System.out.println("example-upstream listening on http://127.0.0.1:" + server.getAddress().getPort());
        }
    }

    private static void serve(HttpExchange ex, Map<String, Version> store, AtomicLong versions) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getRawPath();
            String method = ex.getRequestMethod();
            byte[] body = ex.getRequestBody().readAllBytes();
            int status;
            byte[] answer = new byte[0];
            synchronized (store) {
                Version current = store.get(path);
                String ifMatch = ex.getRequestHeaders().getFirst("If-Match");
                String ifNoneMatch = ex.getRequestHeaders().getFirst("If-None-Match");
                boolean write = method.equals("PUT") || method.equals("POST") || method.equals("DELETE");
                if (write && ifMatch != null && (current == null || !matches(ifMatch, current.etag()))) {
                    status = 412;
                } else if (write && ifNoneMatch != null && current != null
                        && (ifNoneMatch.strip().equals("*") || matches(ifNoneMatch, current.etag()))) {
                    status = 412;
                } else if (method.equals("PUT") || method.equals("POST")) {
                    Version v = new Version(body, "\"v" + versions.incrementAndGet() + "\"");
                    store.put(path, v);
                    ex.getResponseHeaders().set("ETag", v.etag());
                    status = current == null ? 201 : 204;
                } else if (method.equals("DELETE")) {
                    status = store.remove(path) == null ? 404 : 204;
                } else if (method.equals("GET") || method.equals("HEAD")) {
                    if (current == null) {
                        status = 404;
                    } else {
                        status = 200;
                        answer = current.body();
                        ex.getResponseHeaders().set("ETag", current.etag());
                    }
                } else {
                    status = 405;
                }
            }
            boolean empty = answer.length == 0 || method.equals("HEAD") || status == 204;
            ex.sendResponseHeaders(status, empty ? -1 : answer.length);
            if (!empty) {
                ex.getResponseBody().write(answer);
            }
        }
    }

    private static boolean matches(String header, String etag) {
        return header.strip().equals("*") || Arrays.stream(header.split(",")).map(String::strip)
                .anyMatch(etag::equals);
    }
}

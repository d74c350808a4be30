package io.stockade.client;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * The Kubernetes API server's Lease endpoints as recorded from a real one: GET/POST/PUT/DELETE on
 * {@code /apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]}, optimistic concurrency on
 * {@code metadata.resourceVersion} (409 Conflict with a {@code Status} body), 404 NotFound, 409 AlreadyExists.
 * Every request is recorded with its Authorization header.
 */
final class LeaseApiServer implements AutoCloseable {

    private static final Pattern PATH =
            Pattern.compile("/apis/coordination\\.k8s\\.io/v1/namespaces/([^/]+)/leases(?:/([^/]+))?");

    private final HttpServer server;
    private final Map<String, Map<String, Object>> leases = new LinkedHashMap<>();
    private long version = 1000;
    final List<String> requests = new CopyOnWriteArrayList<>();

    LeaseApiServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::handle);
        server.start();
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** The stored object (a copy), or null. */
    synchronized Map<String, Object> get(String ns, String name) {
        Map<String, Object> l = leases.get(ns + "/" + name);
        return l == null ? null : Json.object(Json.write(l));
    }

    /** A Lease written by some other elector that then crashed (nobody renews it). */
    synchronized void create(String ns, String name, String holder, int durationSeconds, long transitions) {
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("holderIdentity", holder);
        spec.put("leaseDurationSeconds", (long) durationSeconds);
        spec.put("acquireTime", "2026-09-18T10:00:00.000000Z");
        spec.put("renewTime", "2026-09-18T10:00:00.000000Z");
        spec.put("leaseTransitions", transitions);
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("name", name);
        meta.put("namespace", ns);
        meta.put("resourceVersion", Long.toString(++version));
        Map<String, Object> l = new LinkedHashMap<>();
        l.put("apiVersion", "coordination.k8s.io/v1");
        l.put("kind", "Lease");
        l.put("metadata", meta);
        l.put("spec", spec);
        leases.put(ns + "/" + name, l);
    }

    /** What {@code kubectl delete lease} does. */
    synchronized void delete(String ns, String name) {
        leases.remove(ns + "/" + name);
    }

    /** Another elector writes the Lease (e.g. client-go taking it over). */
    @SuppressWarnings("unchecked")
    synchronized void takeOver(String ns, String name, String holder) {
        Map<String, Object> l = leases.get(ns + "/" + name);
        Map<String, Object> spec = (Map<String, Object>) l.get("spec");
        spec.put("holderIdentity", holder);
        spec.put("leaseTransitions", ((Number) spec.get("leaseTransitions")).longValue() + 1);
        ((Map<String, Object>) l.get("metadata")).put("resourceVersion", Long.toString(++version));
    }

    @SuppressWarnings("unchecked")
    private synchronized void handle(HttpExchange ex) throws IOException {
        String method = ex.getRequestMethod();
        requests.add(method + " " + ex.getRequestURI().getPath() + " auth=" + ex.getRequestHeaders()
                .getFirst("Authorization"));
        Matcher m = PATH.matcher(ex.getRequestURI().getPath());
        if (!m.matches()) {
            send(ex, 404, status(404, "NotFound", "the server could not find the requested resource"));
            return;
        }
        String ns = m.group(1);
        String name = m.group(2);
        String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        switch (method) {
            case "GET" -> {
                Map<String, Object> l = leases.get(ns + "/" + name);
                if (l == null) {
                    send(ex, 404, status(404, "NotFound", "leases.coordination.k8s.io \"" + name + "\" not found"));
                } else {
                    send(ex, 200, l);
                }
            }
            case "POST" -> {
                Map<String, Object> l = Json.object(body);
                Map<String, Object> meta = (Map<String, Object>) l.get("metadata");
                String n = (String) meta.get("name");
                if (leases.containsKey(ns + "/" + n)) {
                    send(ex, 409, status(409, "AlreadyExists",
                            "leases.coordination.k8s.io \"" + n + "\" already exists"));
                    return;
                }
                meta.put("namespace", ns);
                meta.put("resourceVersion", Long.toString(++version));
                meta.put("uid", "uid-" + version);
                leases.put(ns + "/" + n, l);
                send(ex, 201, l);
            }
            case "PUT" -> {
                Map<String, Object> current = leases.get(ns + "/" + name);
                if (current == null) {
                    send(ex, 404, status(404, "NotFound", "leases.coordination.k8s.io \"" + name + "\" not found"));
                    return;
                }
                Map<String, Object> l = Json.object(body);
                Map<String, Object> meta = (Map<String, Object>) l.get("metadata");
                Object rv = meta.get("resourceVersion");
                String currentRv = (String) ((Map<String, Object>) current.get("metadata")).get("resourceVersion");
                if (rv != null && !rv.equals(currentRv)) {
                    send(ex, 409, status(409, "Conflict", "Operation cannot be fulfilled on leases.coordination.k8s.io"
                            + " \"" + name + "\": the object has been modified; please apply your changes to the "
                            + "latest version and try again"));
                    return;
                }
                meta.put("resourceVersion", Long.toString(++version));
                leases.put(ns + "/" + name, l);
                send(ex, 200, l);
            }
            case "DELETE" -> {
                leases.remove(ns + "/" + name);
                send(ex, 200, status(200, "Success", ""));
            }
            default -> send(ex, 405, status(405, "MethodNotAllowed", method));
        }
    }

    private static Map<String, Object> status(int code, String reason, String message) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("kind", "Status");
        s.put("apiVersion", "v1");
        s.put("metadata", Map.of());
        s.put("status", code < 300 ? "Success" : "Failure");
        s.put("message", message);
        s.put("reason", reason);
        s.put("code", code);
        return s;
    }

    private static void send(HttpExchange ex, int code, Map<String, Object> body) throws IOException {
        byte[] bytes = Json.write(body).getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(code, bytes.length);
        ex.getResponseBody().write(bytes);
        ex.close();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}

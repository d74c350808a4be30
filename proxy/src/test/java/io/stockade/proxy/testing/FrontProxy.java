package io.stockade.proxy.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.stockade.testing.FreePorts;

/**
 * A real reverse proxy in front of Stockade, from the Debian packages ({@code haproxy}, {@code nginx-light}), run as a
 * child process in the foreground on free loopback ports with its configuration and logs in a temporary directory,
 * and killed by its PID (and its workers') on {@link #close()}. nginx also serves as a real WebDAV storage behind
 * Stockade ({@link #webdav}). Installs nothing: {@code ./test.sh} installs the
 * packages; tests skip when {@link #haproxyBinary()} or {@link #nginxBinary()} is empty.
 */
public final class FrontProxy implements AutoCloseable {
    private final String name;
    private final Process process;
    private final Path log;
    private final List<Integer> ports;

    private FrontProxy(String name, Process process, Path log, List<Integer> ports) {
        this.name = name;
        this.process = process;
        this.log = log;
        this.ports = ports;
    }

    public static Optional<Path> haproxyBinary() {
        return binary("haproxy");
    }

    public static Optional<Path> nginxBinary() {
        return binary("nginx");
    }

    private static Optional<Path> binary(String name) {
        for (String dir : List.of("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin")) {
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) {
                return Optional.of(p);
            }
        }
        return Optional.empty();
    }

    /**
     * HAProxy in HTTP mode with {@code http-reuse always} (idle server connections are shared between clients, the
     * setting under which a body read as a request takes the next client's request) in front of
     * {@code 127.0.0.1:backendPort}.
     */
    public static FrontProxy haproxy(Path dir, int backendPort) {
        int port = FreePorts.next();
        String config = """
                global
                    maxconn 200
                defaults
                    mode http
                    timeout connect 2s
                    timeout client 10s
                    timeout server 10s
                    timeout http-keep-alive 10s
                    http-reuse always
                frontend front
                    bind 127.0.0.1:%d
                    default_backend stockade
                backend stockade
                    server s1 127.0.0.1:%d
                """.formatted(port, backendPort);
        Path file = write(dir.resolve("haproxy.cfg"), config);
        Path bin = haproxyBinary().orElseThrow(() -> new IllegalStateException("haproxy is not installed"));
        return start("haproxy", dir, List.of(bin.toString(), "-db", "-f", file.toString()), List.of(port));
    }

    /**
     * nginx with three listeners in front of {@code 127.0.0.1:backendPort}, each through an upstream with idle
     * keep-alive connections: {@link #port(int) port(0)} HTTP/1.1 with request buffering (nginx reads the whole body
     * first), {@code port(1)} HTTP/1.1 without request buffering (bodies stream through), {@code port(2)} nginx's
     * default {@code proxy_http_version 1.0}.
     */
    public static FrontProxy nginx(Path dir, int backendPort) {
        List<Integer> ports = List.of(FreePorts.next(), FreePorts.next(), FreePorts.next());
        String user = System.getProperty("user.name");
        String config = """
                user %s;
                worker_processes 1;
                daemon off;
                master_process on;
                pid %s/nginx.pid;
                error_log %s/error.log info;
                events { worker_connections 128; }
                http {
                    access_log off;
                    client_body_temp_path %s/body;
                    proxy_temp_path %s/proxy;
                    fastcgi_temp_path %s/fastcgi;
                    uwsgi_temp_path %s/uwsgi;
                    scgi_temp_path %s/scgi;
                    upstream stockade {
                        server 127.0.0.1:%d;
                        keepalive 8;
                    }
                    server {
                        listen 127.0.0.1:%d;
                        location / {
                            proxy_pass http://stockade;
                            proxy_http_version 1.1;
                            proxy_set_header Connection "";
                        }
                    }
                    server {
                        listen 127.0.0.1:%d;
                        location / {
                            proxy_pass http://stockade;
                            proxy_http_version 1.1;
                            proxy_set_header Connection "";
                            proxy_request_buffering off;
                        }
                    }
                    server {
                        listen 127.0.0.1:%d;
                        location / {
                            proxy_pass http://stockade;
                        }
                    }
                }
                """.formatted(user, dir, dir, dir, dir, dir, dir, dir, backendPort, ports.get(0), ports.get(1),
                ports.get(2));
        Path file = write(dir.resolve("nginx.conf"), config);
        Path bin = nginxBinary().orElseThrow(() -> new IllegalStateException("nginx is not installed"));
        return start("nginx", dir, List.of(bin.toString(), "-p", dir.toString(),
                "-e", dir.resolve("error.log").toString(), "-c", file.toString()), ports);
    }

    /**
     * nginx as a WebDAV server (its {@code ngx_http_dav_module}, built into Debian's package: {@code nginx -V} says
     * {@code --with-http_dav_module}) serving {@code root} on a free loopback port, {@link #port(int) port(0)}, with
     * {@code dav_methods PUT DELETE MKCOL COPY MOVE} and {@code create_full_put_path on}. Every request that
     * reaches it is one line of {@link #accessLog()}: method, target, status and the Destination header.
     */
    public static FrontProxy webdav(Path dir, Path root) {
        int port = FreePorts.next();
        String user = System.getProperty("user.name");
        String config = """
                user %s;
                worker_processes 1;
                daemon off;
                master_process on;
                pid %s/nginx.pid;
                error_log %s/error.log info;
                events { worker_connections 128; }
                http {
                    log_format dav '$request_method $request_uri $status "$http_destination"';
                    access_log %s/access.log dav;
                    client_body_temp_path %s/body;
                    proxy_temp_path %s/proxy;
                    fastcgi_temp_path %s/fastcgi;
                    uwsgi_temp_path %s/uwsgi;
                    scgi_temp_path %s/scgi;
                    server {
                        listen 127.0.0.1:%d;
                        root %s;
                        location / {
                            dav_methods PUT DELETE MKCOL COPY MOVE;
                            create_full_put_path on;
                            dav_access user:rw group:rw all:r;
                            client_max_body_size 16m;
                        }
                    }
                }
                """.formatted(user, dir, dir, dir, dir, dir, dir, dir, dir, port, root);
        Path file = write(dir.resolve("nginx.conf"), config);
        Path bin = nginxBinary().orElseThrow(() -> new IllegalStateException("nginx is not installed"));
        return start("nginx", dir, List.of(bin.toString(), "-p", dir.toString(),
                "-e", dir.resolve("error.log").toString(), "-c", file.toString()), List.of(port));
    }

    /** Whether the installed nginx has the WebDAV module ({@code nginx -V} lists {@code --with-http_dav_module}). */
    public static boolean nginxHasDav() {
        Optional<Path> bin = nginxBinary();
        if (bin.isEmpty()) {
            return false;
        }
        try {
            Process p = new ProcessBuilder(bin.get().toString(), "-V").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor(10, TimeUnit.SECONDS);
            return out.contains("--with-http_dav_module");
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The lines of nginx's access log ({@link #webdav}: every request that reached it), none when it has none. */
    public List<String> accessLog() {
        Path file = log.resolveSibling("access.log");
        try {
            return Files.exists(file) ? Files.readAllLines(file, StandardCharsets.UTF_8) : List.of();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path write(Path file, String text) {
        try {
            Files.createDirectories(file.getParent());
            return Files.writeString(file, text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static FrontProxy start(String name, Path dir, List<String> command, List<Integer> ports) {
        Path log = dir.resolve(name + ".out");
        Process process;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name, e);
        }
        FrontProxy proxy = new FrontProxy(name, process, log, ports);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (int port : ports) {
            while (!accepts(port)) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    proxy.close();
                    throw new IllegalStateException(name + " did not start listening on " + port + ":\n" + proxy.log());
                }
                sleep(20);
            }
        }
        return proxy;
    }

    private static boolean accepts(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The {@code i}-th listening port (HAProxy has one). */
    public int port(int i) {
        return ports.get(i);
    }

    public long pid() {
        return process.pid();
    }

    /** Its standard output and error (and nginx's error log). */
    public String log() {
        StringBuilder b = new StringBuilder();
        for (Path p : List.of(log, log.resolveSibling("error.log"))) {
            try {
                if (Files.exists(p)) {
                    b.append(Files.readString(p, StandardCharsets.UTF_8));
                }
            } catch (IOException e) {
                b.append("(cannot read ").append(p).append(")");
            }
        }
        return b.toString();
    }

    /**
     * Stops the process by its PID (SIGTERM: nginx's master then stops its workers), waits up to 5 s, then kills it
     * and every child it had (SIGKILL). The master goes first: killed after a worker, it could start a new one.
     */
    @Override
    public void close() {
        List<ProcessHandle> children = process.descendants().toList();
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        List<ProcessHandle> left = new ArrayList<>(children);
        left.addAll(process.descendants().toList());
        for (ProcessHandle h : left) {
            h.destroyForcibly();
            try {
                h.onExit().get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                // gone already, or reported by the next test's port check at worst
            }
        }
    }

    @Override
    public String toString() {
        return name + " (pid " + process.pid() + ")";
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}

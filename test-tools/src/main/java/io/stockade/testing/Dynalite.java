package io.stockade.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeDefinition;
import software.amazon.awssdk.services.dynamodb.model.BillingMode;
import software.amazon.awssdk.services.dynamodb.model.KeySchemaElement;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.ScalarAttributeType;

/**
 * A real DynamoDB API server for tests: <a href="https://github.com/architect/dynalite">dynalite</a> (the npm
 * package, a third-party implementation of the DynamoDB API on LevelDB, in memory here) run with the machine's
 * Node.js on a free loopback port. {@code ./test.sh} installs it into {@code .tools/dynalite} (ignored by git);
 * {@code -Dstockade.dynalite=<path to cli.js>} points elsewhere. Tables are ACTIVE as soon as they are created
 * ({@code --createTableMs 0}). The process is ended by its own PID.
 *
 * <p>What it is not: one node, so every read is trivially consistent; no transactions are used by Stockade, and its
 * conditional writes are checked to behave as DynamoDB documents by {@code DynaliteConditionalWritesIT}.
 */
public final class Dynalite implements AutoCloseable {
    private static final Duration READY = Duration.ofSeconds(30);
    /** Credentials dynalite accepts (it checks that a request is signed, not by whom). */
    public static final String ACCESS_KEY = "stockade-test";
    public static final String SECRET_KEY = "stockade-test-secret";
    public static final String REGION = "us-east-1";

    /** What a test that needs dynalite says when it is not installed. */
    public static final String MISSING = "dynalite is not installed (./test.sh installs it: npm install --prefix"
            + " .tools/dynalite dynalite@4.0.0; or -Dstockade.dynalite=<path to dynalite's cli.js>)";

    private final Process process;
    private final int port;
    private final Path log;

    private Dynalite(Process process, int port, Path log) {
        this.process = process;
        this.port = port;
        this.log = log;
    }

    /**
     * dynalite's {@code cli.js}: {@code -Dstockade.dynalite}, else {@code .tools/dynalite} in this or a
     * parent directory.
     */
    static @Nullable Path cli() {
        String configured = System.getProperty("stockade.dynalite");
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured);
        }
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path cli = dir.resolve(".tools/dynalite/node_modules/dynalite/cli.js");
            if (Files.isRegularFile(cli)) {
                return cli;
            }
        }
        return null;
    }

    /** Whether dynalite and Node.js are installed. */
    public static boolean available() {
        Path cli = cli();
        return cli != null && Files.isRegularFile(cli) && node() != null;
    }

    private static @Nullable String node() {
        for (String candidate : List.of("/usr/bin/node", "/usr/local/bin/node", "/usr/bin/nodejs")) {
            if (Files.isExecutable(Path.of(candidate))) {
                return candidate;
            }
        }
        return null;
    }

    /**
     * Loaded before dynalite ({@code node --require}): a client that disconnects in the middle of a request (a proxy
     * killed with {@code kill -9} during a {@code GetItem}, in the conformance suite's {@code proxy-restart}) makes
     * dynalite 4.0.0 throw from the request's {@code 'error'} handler, and the server exits: every later test of the
     * run then found no lock service. DynamoDB drops that one request; so does this, and any other error still ends
     * the server.
     */
    static final String TOLERATE_ABORTED_REQUESTS = """
            process.on('uncaughtException', function (err) {
              if (err && (err.code === 'ECONNRESET' || err.message === 'aborted')) {
                console.error('dynalite: a client aborted its request (' + err.message + '): dropped');
                return;
              }
              console.error(err);
              process.exit(1);
            });
            """;
    /** {@link #TOLERATE_ABORTED_REQUESTS}'s file, once written ({@link #preload()}). */
    private static @Nullable Path preload;

    /**
     * Starts dynalite on a free loopback port and waits until it answers. A port taken between choosing and binding
     * it (another test's server) is retried with another port.
     */
    public static Dynalite start() {
        if (!available()) {
            throw new IllegalStateException(MISSING);
        }
        IOException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = FreePorts.next();
            Path log = null;
            Process p = null;
            try {
                log = Files.createTempFile("stockade-dynalite-", ".log");
                p = new ProcessBuilder(node(), "--require", preload().toString(),
                        Objects.requireNonNull(cli(), "available() said").toString(), "--host",
                        "127.0.0.1", "--port",
                        Integer.toString(port), "--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
                        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
                Dynalite d = new Dynalite(p, port, log);
                if (d.awaitReady()) {
                    return d;
                }
                last = new IOException("dynalite on port " + port + " did not start: " + d.logText());
                d.close();
            } catch (IOException e) {
                last = e;
                if (p != null) {
                    p.destroyForcibly();
                }
            }
        }
        throw new UncheckedIOException(last);
    }

    /** {@link #TOLERATE_ABORTED_REQUESTS} in a file, written once for this JVM's servers and deleted at its exit. */
    private static synchronized Path preload() throws IOException {
        if (preload == null) {
            Path file = Files.createTempFile("stockade-dynalite-", ".js");
            file.toFile().deleteOnExit();
            Files.writeString(file, TOLERATE_ABORTED_REQUESTS);
            preload = file;
        }
        return preload;
    }

    @SuppressWarnings("AddressSelection") // a literal IPv4 address resolves to itself alone, as the server listens
    private boolean awaitReady() throws IOException {
        long deadline = System.nanoTime() + READY.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                return false; // e.g. EADDRINUSE: the caller tries another port
            }
            if (logText().contains("listening at")) {
                try (Socket s = new Socket()) {
                    s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
                    return true;
                } catch (IOException e) {
                    // not yet
                }
            }
            try {
                TimeUnit.MILLISECONDS.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
        }
        return false;
    }

    String logText() throws IOException {
        return Files.readString(log, StandardCharsets.UTF_8);
    }

    /** A client of this server (the AWS SDK v2, test credentials, us-east-1); the caller closes it. */
    public DynamoDbClient client() {
        return DynamoDbClient.builder()
                .endpointOverride(endpoint())
                .region(Region.of(REGION))
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY,
                        SECRET_KEY)))
                .httpClient(Apache5HttpClient.builder().build())
                .build();
    }

    /**
     * Creates a table laid out as Stockade's DynamoDB lock recipe wants it (partition key {@code key}, a string;
     * on demand) and returns its name. Written here rather than borrowed from the client SDK: the proxy's tests
     * write lock items by hand, from the documented layout.
     */
    public String createLockTable(String table) {
        try (DynamoDbClient c = client()) {
            c.createTable(b -> b.tableName(table)
                    .attributeDefinitions(AttributeDefinition.builder().attributeName("key")
                            .attributeType(ScalarAttributeType.S).build())
                    .keySchema(KeySchemaElement.builder().attributeName("key").keyType(KeyType.HASH).build())
                    .billingMode(BillingMode.PAY_PER_REQUEST));
        }
        return table;
    }

    /** {@code http://127.0.0.1:PORT}. */
    public URI endpoint() {
        return URI.create("http://127.0.0.1:" + port);
    }

    public int port() {
        return port;
    }

    @Override
    public void close() {
        if (!process.isAlive()) {
            // it died under a test (seen once in CI: a conformance case's writers met "connection refused"): say how
            String text;
            try {
                text = logText();
            } catch (IOException e) {
                text = "(unreadable: " + e.getMessage() + ")";
            }
            System.err.println("dynalite on port " + port + " had exited (code " + process.exitValue()
                    + ") before the test closed it; its log:\n" + text);
        } else {
            // SIGKILL: it keeps nothing (in memory), and on SIGTERM it waits for its clients' idle keep-alive
            // connections to close (20 s of a test's time)
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            Files.deleteIfExists(log);
        } catch (IOException e) {
            // a temp file
        }
    }
}

package io.stockade.client.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.StreamHandler;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.client.Lease;
import io.stockade.client.LeaseProvider;
import io.stockade.client.Leases;
import io.stockade.client.LossReason;

import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * {@code lease run}: holds a lease while a command runs, and stops the command the moment the lease is lost.
 *
 * <pre>
 * java -jar stockade-client-sdk.jar run (--etcd URL | --postgres JDBC_URL | --kubernetes NAMESPACE|- | --redis URL
 *      | --zookeeper HOST:PORT[,...] | --consul URL | --dynamodb TABLE) --name NAME --ttl 15s [--grace 10s]
 *      [--wait 0s] [--identity ID] [--redis-replicas N] [--redis-replicas-timeout 500ms] [--zookeeper-prefix /locks/]
 *      [--consul-prefix locks/] [--dynamodb-prefix locks/] [--dynamodb-endpoint URL] -- COMMAND [ARGS...]
 * </pre>
 *
 * With {@code --redis}, the password comes from the URL or, when it has none, from {@code REDISCLI_AUTH} (as for
 * {@code redis-cli}: a command line is visible to every user of the machine); {@code rediss://} trusts the JVM's
 * default authorities ({@code -Djavax.net.ssl.trustStore}, and {@code -Djavax.net.ssl.keyStore} for a client
 * certificate). With {@code --zookeeper}, the lock is the path {@code --zookeeper-prefix} (default {@code /}) + name,
 * and a disconnection from ZooKeeper stops the command at once (the session may already have expired). With
 * {@code --consul}, the lock is the KV key {@code --consul-prefix} (default none) + name, the ACL token comes from
 * {@code CONSUL_HTTP_TOKEN} (as for the {@code consul} command), and the ttl is the session TTL (10s..24h). With
 * {@code --dynamodb}, the lock is the item {@code --dynamodb-prefix} (default none) + name of the table, the region
 * and credentials come from the AWS SDK's defaults (as for the {@code aws} command: {@code AWS_REGION}, the profile,
 * web identity, the instance role), and {@code --dynamodb-endpoint} points at DynamoDB Local or a VPC endpoint. The
 * command gets {@code FENCING_TOKEN} and {@code STOCKADE_LEASE_NAME} in its environment. Exit codes: the
 * command's own when it ends while the lease is held; {@value #LOST} when the lease was lost (the command was
 * stopped: SIGTERM, then SIGKILL after the grace); {@value #BUSY} when another holder kept the lease for the whole
 * {@code --wait}; {@value #UNAVAILABLE} when the lock service failed; {@value #NO_COMMAND} when the command could
 * not be started; {@value #USAGE} for a bad command line.
 */
public final class LeaseCommand {

    /** The lease was lost while the command ran (EX_TEMPFAIL). */
    public static final int LOST = 75;
    /** The lease was held by another holder for the whole wait (EX_CANTCREAT). */
    public static final int BUSY = 73;
    /** The lock service could not be used (EX_UNAVAILABLE). */
    public static final int UNAVAILABLE = 69;
    /** The command could not be started (as a shell's "command not found"). */
    public static final int NO_COMMAND = 127;
    /** A bad command line. */
    public static final int USAGE = 2;

    private static final String USAGE_TEXT = """
            usage: lease run (--etcd URL[,URL...] | --postgres JDBC_URL | --kubernetes NAMESPACE|- | --redis URL
                              | --zookeeper HOST:PORT[,HOST:PORT...] | --consul URL | --dynamodb TABLE)
                             --name NAME --ttl DURATION [--grace DURATION] [--wait DURATION] [--identity ID]
                             [--redis-replicas N] [--redis-replicas-timeout DURATION] [--zookeeper-prefix PATH]
                             [--consul-prefix PREFIX] [--dynamodb-prefix PREFIX] [--dynamodb-endpoint URL]
                             -- COMMAND [ARGS...]
              DURATION: 15s, 500ms, 2m, 1h or ISO-8601 (PT15S). Defaults: --grace 10s, --wait 0s.
              --redis redis://[user:password@]host:port[/db] or rediss://... (TLS); no password in it: REDISCLI_AUTH.
              --redis-replicas N: WAIT for N replicas after acquiring and renewing (timeout default 500ms).
              --zookeeper-prefix PATH: the lock is PATH + NAME (default /); the ttl is the session timeout.
              --consul http://host:8500: the lock is the KV key --consul-prefix + NAME (default no prefix); the ACL
                token from CONSUL_HTTP_TOKEN; the ttl is the session TTL, 10s..24h.
              --dynamodb TABLE: the lock is the item --dynamodb-prefix + NAME (partition key 'key'); region and
                credentials as for the aws command (AWS_REGION, AWS_PROFILE, ...); --dynamodb-endpoint URL for
                DynamoDB Local or a VPC endpoint.
              exit: the command's code; 75 lease lost (command stopped); 73 lease busy; 69 lock service failed;
                    127 command not started; 2 usage""";

    private LeaseCommand() {
    }

    /**
     * Runs the command line and exits with its status.
     *
     * @param args {@code run ...} as in the class description
     */
    public static void main(String[] args) {
        oneLineLogs();
        System.exit(run(args, System.out, System.err));
    }

    /**
     * The libraries' log records (the lease's own loss line, jetcd's, Jedis's) as one line each on standard error,
     * {@code lease: <level>: <message>[: <exception>]}: read by people at 3 a.m., grepped against other logs, never
     * a stack trace.
     */
    static void oneLineLogs() {
        Logger root = Logger.getLogger("");
        for (Handler h : root.getHandlers()) {
            root.removeHandler(h);
        }
        StreamHandler handler = new StreamHandler(System.err, new OneLine()) {
            @Override
            public synchronized void publish(LogRecord record) {
                super.publish(record);
                flush();
            }
        };
        handler.setLevel(Level.ALL);
        root.addHandler(handler);
    }

    /** One line per record: the message with its lines joined, the exception's own description without a trace. */
    static final class OneLine extends Formatter {
        @Override
        public String format(LogRecord record) {
            StringBuilder b = new StringBuilder("lease: ")
                    .append(record.getLevel().getName().toLowerCase(Locale.ROOT)).append(": ")
                    .append(String.join(" ", formatMessage(record).strip().lines().map(String::strip).toList()));
            if (record.getThrown() != null) {
                String t = String.valueOf(record.getThrown());
                b.append(": ").append(String.join(" ", t.strip().lines().map(String::strip).toList()));
            }
            return b.append(System.lineSeparator()).toString();
        }
    }

    static int run(String[] args, PrintStream err) {
        return run(args, System.out, err);
    }

    /**
     * {@code -h}/{@code --help} in an option's place (before {@code --}, never an option's value: {@code --name
     * help} names a lease) prints the usage to {@code out} and exits 0.
     */
    static int run(String[] args, PrintStream out, PrintStream err) {
        int first = args.length > 0 && args[0].equals("run") ? 1 : 0;
        for (int i = first; i < args.length && !args[i].equals("--"); i += 2) { // every option takes one value
            if (args[i].equals("--help") || args[i].equals("-h") || (first == 0 && args[i].equals("help"))) {
                out.println(USAGE_TEXT);
                return 0;
            }
        }
        Options o;
        try {
            o = Options.parse(args);
        } catch (IllegalArgumentException e) {
            err.println("lease: " + e.getMessage());
            err.println(USAGE_TEXT);
            return USAGE;
        }
        Leases.Builder builder = Leases.newBuilder();
        if (o.identity != null) {
            builder.holderIdentity(o.identity);
        }
        if (o.replicas > 0) {
            builder.redisReplicas(o.replicas, o.replicasTimeout);
        }
        LeaseProvider provider;
        Lease lease;
        try {
            provider = switch (o.service) {
                case "etcd" -> builder.etcd(o.target.split(","));
                case "postgres" -> builder.postgres(o.target);
                case "redis" -> redis(builder, o.target, System.getenv("REDISCLI_AUTH"));
                case "zookeeper" -> {
                    quietZooKeeper();
                    yield builder.zookeeper(o.target, Objects.requireNonNull(o.zookeeperPrefix));
                }
                case "consul" -> builder.consul(URI.create(o.target), Objects.requireNonNull(o.consulPrefix),
                        consulToken(System.getenv("CONSUL_HTTP_TOKEN")));
                case "dynamodb" -> builder.dynamodb(dynamoDb(o.dynamodbEndpoint), o.target,
                        Objects.requireNonNull(o.dynamodbPrefix));
                default -> builder.kubernetesInCluster(o.target.equals("-") ? null : o.target);
            };
        } catch (RuntimeException e) {
            err.println("lease: cannot use the lock service: " + e.getMessage());
            return UNAVAILABLE;
        }
        try (provider) {
            try {
                lease = provider.acquire(o.name, o.ttl, o.wait);
            } catch (TimeoutException e) {
                err.println("lease: " + e.getMessage());
                return BUSY;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return UNAVAILABLE;
            } catch (RuntimeException e) {
                err.println("lease: cannot acquire '" + o.name + "': " + e.getMessage());
                return UNAVAILABLE;
            }
            try (lease) {
                return supervise(o, lease, err);
            }
        }
    }

    /**
     * The ZooKeeper client and Curator log every connection, and every reconnect attempt after a disconnection
     * (with a stack trace): the lease's own line says the lease was lost, so theirs stay out of the output.
     */
    private static final Logger[] ZOOKEEPER_LOGS = {
        Logger.getLogger("org.apache.zookeeper"),
        Logger.getLogger("org.apache.curator")};

    private static void quietZooKeeper() {
        for (Logger log : ZOOKEEPER_LOGS) {
            log.setLevel(Level.OFF);
        }
    }

    /**
     * A DynamoDB client with the AWS SDK's default region and credentials (as the {@code aws} command finds them)
     * over the Apache 5 HTTP client; left open until the process exits.
     */
    private static DynamoDbClient dynamoDb(@Nullable String endpoint) {
        var b = DynamoDbClient.builder()
                .httpClient(Apache5HttpClient.builder().build());
        if (endpoint != null) {
            b.endpointOverride(URI.create(endpoint));
        }
        try {
            return b.build();
        } catch (SdkClientException e) {
            throw new IllegalStateException("DynamoDB: " + e.getMessage() + " (set AWS_REGION)", e);
        }
    }

    /** The ACL token from {@code CONSUL_HTTP_TOKEN}, as the {@code consul} command reads it; empty is none. */
    static @Nullable String consulToken(@Nullable String env) {
        return env == null || env.isBlank() ? null : env.strip();
    }

    /** The Redis provider; the password from {@code REDISCLI_AUTH} when the URL has none. */
    static LeaseProvider redis(Leases.Builder builder, String url, @Nullable String envPassword) {
        URI uri = URI.create(url);
        String info = uri.getUserInfo();
        boolean hasPassword = info != null && (info.indexOf(':') < 0 ? !info.isEmpty()
                : info.indexOf(':') < info.length() - 1);
        if (!hasPassword && envPassword != null && !envPassword.isEmpty()) {
            String user = info == null || info.indexOf(':') < 0 ? null : info.substring(0, info.indexOf(':'));
            builder.redisCredentials(user == null || user.isEmpty() ? null : user, envPassword);
        }
        return builder.redis(url);
    }

    private static int supervise(Options o, Lease lease, PrintStream err) {
        CompletableFuture<LossReason> lost = new CompletableFuture<>();
        lease.addListener((l, reason) -> {
            if (reason != LossReason.RELEASED) {
                lost.complete(reason);
            }
        });
        ProcessBuilder pb = new ProcessBuilder(o.command).inheritIO();
        pb.environment().put("FENCING_TOKEN", Long.toString(lease.token()));
        pb.environment().put("STOCKADE_LEASE_NAME", o.name);
        Process child;
        try {
            child = pb.start();
        } catch (IOException e) {
            err.println("lease: cannot start " + o.command.get(0) + ": " + e.getMessage());
            return NO_COMMAND;
        }
        err.println("lease: holding '" + o.name + "' with token " + lease.token() + "; started pid " + child.pid());
        Thread hook = new Thread(() -> stop(child, o.grace, err), "lease-run-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            CompletableFuture.anyOf(child.onExit(), lost).get();
        } catch (InterruptedException | ExecutionException e) {
            stop(child, o.grace, err);
            return UNAVAILABLE;
        }
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is stopping the child
        }
        if (!child.isAlive() && !lost.isDone()) {
            return child.exitValue();
        }
        LossReason reason = lost.getNow(LossReason.EXPIRED);
        err.println("lease: lost '" + o.name + "' (" + reason + "); stopping pid " + child.pid());
        stop(child, o.grace, err);
        return LOST;
    }

    /** SIGTERM to the command and its descendants, SIGKILL to whatever is left after the grace. */
    private static void stop(Process child, Duration grace, PrintStream err) {
        if (!child.isAlive()) {
            return;
        }
        List<ProcessHandle> tree = new ArrayList<>(child.descendants().toList());
        child.destroy();
        tree.forEach(ProcessHandle::destroy);
        try {
            if (!child.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                err.println("lease: pid " + child.pid() + " still running after " + grace + "; killing it");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        tree.addAll(child.descendants().toList());
        tree.forEach(ProcessHandle::destroyForcibly);
        child.destroyForcibly();
        try {
            child.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Parses {@code 15s}, {@code 500ms}, {@code 2m}, {@code 1h} or ISO-8601 ({@code PT15S}). */
    static Duration duration(String option, String text) {
        Matcher m = Pattern.compile("(\\d+)(ms|s|m|h)").matcher(text);
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            return switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                default -> Duration.ofHours(n);
            };
        }
        try {
            return Duration.parse(text.toUpperCase(Locale.ROOT));
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException(option + ": '" + text + "' is not a duration (15s, 500ms, 2m, PT15S)");
        }
    }

    private static final String ONE_OF = "give one of --etcd, --postgres, --kubernetes, --redis, --zookeeper,"
            + " --consul, --dynamodb";

    /** The parsed command line. */
    static final class Options {
        // parse() sets these four or throws: NullAway cannot see a field set outside a constructor
        @SuppressWarnings("NullAway.Init") String service;
        @SuppressWarnings("NullAway.Init") String target;
        @SuppressWarnings("NullAway.Init") String name;
        @SuppressWarnings("NullAway.Init") Duration ttl;
        Duration grace = Duration.ofSeconds(10);
        Duration wait = Duration.ZERO;
        @Nullable String identity;
        int replicas;
        Duration replicasTimeout = Duration.ofMillis(500);
        @Nullable String zookeeperPrefix;   // parse() sets each for its own service
        @Nullable String consulPrefix;
        @Nullable String dynamodbPrefix;
        @Nullable String dynamodbEndpoint;
        List<String> command = List.of();

        static Options parse(String[] args) {
            Options o = new Options();
            List<String> a = Arrays.asList(args);
            if (a.isEmpty() || !a.get(0).equals("run")) {
                throw new IllegalArgumentException("the only command is 'run'");
            }
            int i = 1;
            for (; i < a.size(); i++) {
                String opt = a.get(i);
                if (opt.equals("--")) {
                    o.command = List.copyOf(a.subList(i + 1, a.size()));
                    break;
                }
                if (i + 1 >= a.size()) {
                    throw new IllegalArgumentException(opt + " needs a value");
                }
                String v = a.get(++i);
                switch (opt) {
                    case "--etcd", "--postgres", "--kubernetes", "--redis", "--zookeeper", "--consul", "--dynamodb" -> {
                        if (o.service != null) {
                            throw new IllegalArgumentException(ONE_OF);
                        }
                        o.service = opt.substring(2);
                        o.target = v;
                    }
                    case "--name" -> o.name = v;
                    case "--ttl" -> o.ttl = duration(opt, v);
                    case "--grace" -> o.grace = duration(opt, v);
                    case "--wait" -> o.wait = duration(opt, v);
                    case "--identity" -> o.identity = v;
                    case "--redis-replicas" -> {
                        try {
                            o.replicas = Integer.parseInt(v);
                        } catch (NumberFormatException e) {
                            o.replicas = 0;
                        }
                        if (o.replicas < 1) {
                            throw new IllegalArgumentException("--redis-replicas: '" + v + "' is not a number of"
                                    + " replicas (1 or more)");
                        }
                    }
                    case "--redis-replicas-timeout" -> o.replicasTimeout = duration(opt, v);
                    case "--zookeeper-prefix" -> {
                        if (!v.startsWith("/")) {
                            throw new IllegalArgumentException("--zookeeper-prefix: '" + v + "' is not an absolute"
                                    + " path (e.g. /locks/)");
                        }
                        o.zookeeperPrefix = v;
                    }
                    case "--consul-prefix" -> {
                        if (v.startsWith("/")) {
                            throw new IllegalArgumentException("--consul-prefix: '" + v + "' starts with '/': Consul"
                                    + " KV keys do not (e.g. locks/)");
                        }
                        o.consulPrefix = v;
                    }
                    case "--dynamodb-prefix" -> o.dynamodbPrefix = v;
                    case "--dynamodb-endpoint" -> {
                        if (!v.matches("(?i)https?://[^/?#@]+/?")) {
                            throw new IllegalArgumentException("--dynamodb-endpoint: expected http(s)://host:port,"
                                    + " got '" + v + "'");
                        }
                        o.dynamodbEndpoint = v;
                    }
                    default -> throw new IllegalArgumentException("unknown option " + opt);
                }
            }
            o.checkTogether();
            return o;
        }

        /** What only the options together can tell: one service, and the options that go with it. */
        private void checkTogether() {
            Options o = this;
            if (o.service == null) {
                throw new IllegalArgumentException(ONE_OF);
            }
            if (o.replicas > 0 && !o.service.equals("redis")) {
                throw new IllegalArgumentException("--redis-replicas goes with --redis");
            }
            if (o.zookeeperPrefix != null && !o.service.equals("zookeeper")) {
                throw new IllegalArgumentException("--zookeeper-prefix goes with --zookeeper");
            }
            if (o.service.equals("zookeeper") && o.zookeeperPrefix == null) {
                o.zookeeperPrefix = "/";
            }
            if (o.consulPrefix != null && !o.service.equals("consul")) {
                throw new IllegalArgumentException("--consul-prefix goes with --consul");
            }
            if (o.service.equals("consul")) {
                if (!o.target.matches("(?i)https?://[^/?#]+/?")) {
                    throw new IllegalArgumentException("--consul: expected the HTTP API as http://host:8500 or"
                            + " https://host:8501, got '" + o.target + "'");
                }
                if (o.consulPrefix == null) {
                    o.consulPrefix = "";
                }
            }
            if ((o.dynamodbPrefix != null || o.dynamodbEndpoint != null) && !o.service.equals("dynamodb")) {
                throw new IllegalArgumentException((o.dynamodbPrefix != null ? "--dynamodb-prefix"
                        : "--dynamodb-endpoint") + " goes with --dynamodb");
            }
            if (o.service.equals("dynamodb")) {
                if (!o.target.matches("[A-Za-z0-9_.-]{3,255}")) {
                    throw new IllegalArgumentException("--dynamodb: '" + o.target + "' is not a DynamoDB table name"
                            + " (3 to 255 of A-Z a-z 0-9 _ . -)");
                }
                if (o.dynamodbPrefix == null) {
                    o.dynamodbPrefix = "";
                }
            }
            if (o.name == null || o.name.isEmpty()) {
                throw new IllegalArgumentException("--name is required");
            }
            if (o.ttl == null || o.ttl.isZero() || o.ttl.isNegative()) {
                throw new IllegalArgumentException("--ttl is required and must be positive");
            }
            if (o.command.isEmpty()) {
                throw new IllegalArgumentException("no command after --");
            }
        }
    }
}

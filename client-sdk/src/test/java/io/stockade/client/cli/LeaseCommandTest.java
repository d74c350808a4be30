package io.stockade.client.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The command line of {@code lease run}. */
class LeaseCommandTest {

    @Test
    void durationsTakeShortUnitsAndIso8601() {
        assertEquals(Duration.ofSeconds(15), LeaseCommand.duration("--ttl", "15s"));
        assertEquals(Duration.ofMillis(500), LeaseCommand.duration("--ttl", "500ms"));
        assertEquals(Duration.ofMinutes(2), LeaseCommand.duration("--ttl", "2m"));
        assertEquals(Duration.ofSeconds(15), LeaseCommand.duration("--ttl", "PT15S"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.duration("--ttl", "15 s"))
                .getMessage().startsWith("--ttl:"));
    }

    @Test
    void everythingAfterTheDoubleDashIsTheCommand() {
        LeaseCommand.Options o = LeaseCommand.Options.parse(new String[] {"run", "--etcd", "http://e:2379",
                "--name", "job", "--ttl", "15s", "--", "sh", "-c", "echo --name"});
        assertEquals("etcd", o.service);
        assertEquals(List.of("sh", "-c", "echo --name"), o.command);
        assertEquals(Duration.ofSeconds(10), o.grace);
        assertEquals(Duration.ZERO, o.wait);
    }

    @Test
    void aBadCommandLineExitsWith2AndSaysWhy() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = LeaseCommand.run(new String[] {"run", "--etcd", "a", "--postgres", "b", "--name", "n", "--ttl",
                "1s", "--", "true"}, new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(LeaseCommand.USAGE, code);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("give one of --etcd, --postgres, --kubernetes"));
        assertEquals(LeaseCommand.USAGE, LeaseCommand.run(new String[] {"run", "--etcd", "a", "--name", "n",
                "--ttl", "1s"}, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)));
    }

    @Test
    void helpPrintsTheUsageAndExits0WhereverItIsBeforeTheCommand() {
        for (String[] args : List.of(new String[] {"--help"}, new String[] {"run", "--help"}, new String[] {"-h"},
                new String[] {"run", "--etcd", "a", "--help"})) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            assertEquals(0, LeaseCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                    new PrintStream(err, true, StandardCharsets.UTF_8)), List.of(args).toString());
            assertTrue(out.toString(StandardCharsets.UTF_8).startsWith("usage: lease run"), out.toString());
            assertEquals("", err.toString(StandardCharsets.UTF_8));
        }
        // an option's value is never help: a lease named "help", an identity "-h"
        for (String[] args : List.<String[]>of(new String[] {"run", "--etcd", "a", "--name", "help", "--ttl", "1s"},
                new String[] {"run", "--etcd", "a", "--identity", "-h", "--name", "n", "--ttl", "1s"})) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            assertEquals(LeaseCommand.USAGE, LeaseCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                    new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)), "no command: usage");
            assertEquals("", out.toString(StandardCharsets.UTF_8), "not taken for --help: " + List.of(args));
        }
        // after --, --help is the command's
        LeaseCommand.Options o = LeaseCommand.Options.parse(new String[] {"run", "--etcd", "http://e:2379",
                "--name", "job", "--ttl", "15s", "--", "tool", "--help"});
        assertEquals(List.of("tool", "--help"), o.command);
    }

    @Test
    void zookeeperTakesItsPrefixAndThePrefixNeedsZooKeeper() {
        LeaseCommand.Options o = LeaseCommand.Options.parse(new String[] {"run", "--zookeeper", "z1:2181,z2:2181",
                "--name", "job", "--ttl", "15s", "--zookeeper-prefix", "/locks/", "--", "true"});
        assertEquals("zookeeper", o.service);
        assertEquals("z1:2181,z2:2181", o.target);
        assertEquals("/locks/", o.zookeeperPrefix);
        assertEquals("/", LeaseCommand.Options.parse(new String[] {"run", "--zookeeper", "z1:2181", "--name", "job",
                "--ttl", "15s", "--", "true"}).zookeeperPrefix);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.Options.parse(new String[] {"run",
                "--etcd", "http://e:2379", "--name", "job", "--ttl", "15s", "--zookeeper-prefix", "/l/", "--",
                "true"})).getMessage().contains("--zookeeper-prefix goes with --zookeeper"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.Options.parse(new String[] {"run",
                "--zookeeper", "z1:2181", "--name", "job", "--ttl", "15s", "--zookeeper-prefix", "locks/", "--",
                "true"})).getMessage().contains("is not an absolute path"));
    }

    @Test
    void consulTakesItsPrefixAndThePrefixNeedsConsul() {
        LeaseCommand.Options o = LeaseCommand.Options.parse(new String[] {"run", "--consul", "http://c:8500",
                "--name", "job", "--ttl", "15s", "--consul-prefix", "locks/", "--", "true"});
        assertEquals("consul", o.service);
        assertEquals("http://c:8500", o.target);
        assertEquals("locks/", o.consulPrefix);
        assertEquals("", LeaseCommand.Options.parse(new String[] {"run", "--consul", "https://c:8501", "--name",
                "job", "--ttl", "15s", "--", "true"}).consulPrefix);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.Options.parse(new String[] {"run",
                "--etcd", "http://e:2379", "--name", "job", "--ttl", "15s", "--consul-prefix", "l/", "--",
                "true"})).getMessage().contains("--consul-prefix goes with --consul"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.Options.parse(new String[] {"run",
                "--consul", "http://c:8500", "--name", "job", "--ttl", "15s", "--consul-prefix", "/locks/", "--",
                "true"})).getMessage().contains("starts with '/'"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.Options.parse(new String[] {"run",
                "--consul", "c:8500", "--name", "job", "--ttl", "15s", "--", "true"})).getMessage()
                .contains("expected the HTTP API as http://host:8500"));
        assertEquals(null, LeaseCommand.consulToken(" "));
        assertEquals("t0k", LeaseCommand.consulToken("t0k\n"));
    }

    @Test
    void dynamodbTakesATablePrefixAndEndpointAndTheyNeedDynamodb() {
        LeaseCommand.Options o = LeaseCommand.Options.parse(new String[] {"run", "--dynamodb", "stockade-locks",
                "--name", "job", "--ttl", "15s", "--dynamodb-prefix", "locks/", "--dynamodb-endpoint",
                "http://127.0.0.1:8000", "--", "true"});
        assertEquals("dynamodb", o.service);
        assertEquals("stockade-locks", o.target);
        assertEquals("locks/", o.dynamodbPrefix);
        assertEquals("http://127.0.0.1:8000", o.dynamodbEndpoint);
        LeaseCommand.Options plain = LeaseCommand.Options.parse(new String[] {"run", "--dynamodb", "locks", "--name",
                "job", "--ttl", "15s", "--", "true"});
        assertEquals("", plain.dynamodbPrefix);
        assertEquals(null, plain.dynamodbEndpoint);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.Options.parse(new String[] {"run",
                "--etcd", "http://e:2379", "--name", "job", "--ttl", "15s", "--dynamodb-endpoint", "http://d:8000",
                "--", "true"})).getMessage().contains("--dynamodb-endpoint goes with --dynamodb"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.Options.parse(new String[] {"run",
                "--dynamodb", "x", "--name", "job", "--ttl", "15s", "--", "true"})).getMessage()
                .contains("not a DynamoDB table name"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.Options.parse(new String[] {"run",
                "--dynamodb", "locks", "--name", "job", "--ttl", "15s", "--dynamodb-endpoint", "d:8000", "--",
                "true"})).getMessage().contains("expected http(s)://host:port"));
    }

    @Test
    void redisTakesItsReplicasAndTheyNeedRedis() {
        LeaseCommand.Options o = LeaseCommand.Options.parse(new String[] {"run", "--redis", "rediss://r:6380/1",
                "--name", "job", "--ttl", "15s", "--redis-replicas", "2", "--redis-replicas-timeout", "250ms", "--",
                "true"});
        assertEquals("redis", o.service);
        assertEquals("rediss://r:6380/1", o.target);
        assertEquals(2, o.replicas);
        assertEquals(Duration.ofMillis(250), o.replicasTimeout);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.Options.parse(new String[] {"run",
                "--etcd", "http://e:2379", "--name", "job", "--ttl", "15s", "--redis-replicas", "1", "--", "true"}))
                .getMessage().contains("--redis-replicas goes with --redis"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseCommand.Options.parse(new String[] {"run",
                "--redis", "redis://r", "--name", "job", "--ttl", "15s", "--redis-replicas", "0", "--", "true"}))
                .getMessage().contains("not a number of replicas"));
    }
}

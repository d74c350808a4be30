package io.stockade.conformance;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TargetTest {

    @Test
    void aFullTargetIsRead() {
        Target t = Target.parse("""
                name: pg
                proxy: {url: "http://127.0.0.1:8080/", path: "/docs/{key}"}
                read: {jdbc: "jdbc:postgresql://127.0.0.1/app", user: app, sql: "select body from docs where id = ?"}
                control: {url: "http://127.0.0.1:9000", path: "/{key}"}
                lease: {ttl: 2s}
                writers: 3
                """, "t.yaml");
        assertEquals("http://127.0.0.1:8080", t.proxyUrl());
        assertEquals(Duration.ofSeconds(2), t.ttl());
        assertEquals(3, t.writers());
        assertTrue(t.reader().describe().startsWith("jdbc "));
    }

    @Test
    void mistakesAreNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Target.parse("proxy: {url: x}\nread: {directory: /d}\nwritter: 2\n", "t.yaml"));
        assertTrue(e.getMessage().contains("unknown key 'writter'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Target.parse("proxy: {path: /x}\nread: {directory: /d}\n",
                "t.yaml"));
        assertThrows(IllegalArgumentException.class, () -> Target.parse("proxy: {url: x}\nread: {s3: b}\n", "t.yaml"));
        assertThrows(IllegalArgumentException.class, () -> Scenario.parse("nap"));
        assertEquals(Scenario.LOST_RESPONSE, Scenario.parse("lost_response"));
    }

    @Test
    void aKeyGivenNoValueIsNamedNotANullPointer() {
        // header: ~ (or "header:" and nothing) once made a target whose writers failed with a NullPointerException
        for (String[] c : new String[][] {
                {"proxy: {url: x, header: ~}\nread: {directory: /d}\n", "t.yaml: proxy.header has no value"},
                {"proxy:\n  url: x\n  header:\nread: {directory: /d}\n", "t.yaml: proxy.header has no value"},
                {"proxy: {url: x}\nread: {directory: /d, file: ~}\n", "t.yaml: read.file has no value"},
                {"proxy: {url: x}\nread: {directory: /d}\nlease: {ttl: ~}\n", "t.yaml: lease.ttl has no value"}}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Target.parse(c[0],
                    "t.yaml"), c[0]);
            assertTrue(e.getMessage().startsWith(c[1]), e.getMessage());
        }
        assertEquals("Fencing-Token", Target.parse("proxy: {url: x}\nread: {directory: /d}\n", "t.yaml").header());
    }

    @Test
    void aSqlTargetWritesThroughTheListenerAndItsControlReadsItsOwnTable() throws Exception {
        Target t = Target.parse("""
                name: sql
                sql:
                  url: "jdbc:postgresql://127.0.0.1:6432/app?user=jobs"
                  statement: insert into jobs (id, state) values (?, ?) on conflict (id) do update set state = ?
                  params: ["{id}", "{value}", "{value}"]
                read: {jdbc: "jdbc:postgresql://127.0.0.1:5432/app", sql: "select state from jobs where id = ?",
                       param: "{id}"}
                control:
                  jdbc: "jdbc:postgresql://127.0.0.1:5432/app?user=jobs"
                  sql: insert into jobs_control (id, state) values (?, ?) on conflict (id) do update set state = ?
                  read-sql: select state from jobs_control where id = ?
                """, "t.yaml");
        assertEquals(List.of("{id}", "{value}", "{value}"), t.sql().params());
        assertEquals(null, t.proxyPath());
        try (var control = t.controlReader()) {
            assertTrue(control.describe().contains("jobs_control"), control.describe());
        }
        String base = "read: {jdbc: \"jdbc:postgresql://h/app\", sql: \"select 1 where ? = ?\"}\n";
        for (String[] wrong : new String[][] {
            {"proxy: {url: x}\nsql: {url: \"jdbc:postgresql://h:6432/app\", statement: s, params: [\"{id}\","
                    + " \"{value}\"]}\n", "'proxy' (HTTP writes) or 'sql'"},
            {"sql: {url: \"jdbc:postgresql://h:6432/app\", statement: s, params: [\"{id}\"]}\n", "must bind {value}"},
            {"sql: {url: \"jdbc:postgresql://h:6432/app?options=-c%20x=1\", statement: s, params: [\"{id}\","
                    + " \"{value}\"]}\n", "leave it out"},
            {"sql: {url: \"http://h:6432/app\", statement: s, params: [\"{id}\", \"{value}\"]}\n", "JDBC URL"},
            {"sql: {url: \"jdbc:postgresql://h:6432/app\", statement: s, params: [\"{id}\", \"{value}\"]}\n"
                    + "control: {url: \"http://h\"}\n", "not for a sql target"},
            {"sql: {url: \"jdbc:postgresql://h:6432/app\", statement: s, params: [\"{id}\", \"{value}\"]}\n"
                    + "control: {sql: x}\n", "needs control.jdbc"},
        }) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Target.parse(wrong[0] + base, "t.yaml"));
            assertTrue(e.getMessage().contains(wrong[1]), e.getMessage());
        }
    }

    @Test
    void aUserRouteIsDescribed() throws Exception {
        Target t = Target.parse("""
                proxy:
                  url: http://127.0.0.1:8080
                  path: /jobs/{id}
                  method: post
                  content-type: application/json
                  body: '{"value": "{value}", "token": {token}, "job": "{id}"}'
                read: {jdbc: "jdbc:postgresql://127.0.0.1/app", sql: "select value from jobs where id = ?",
                       param: "{id}"}
                control: {url: "http://127.0.0.1:9000", path: "/jobs/{id}", method: PUT}
                """, "t.yaml");
        assertEquals(new Target.Request("POST", "{\"value\": \"{value}\", \"token\": {token}, \"job\": \"{id}\"}",
                "application/json"), t.request());
        assertTrue(t.reader().describe().endsWith("(? = {id})"), t.reader().describe());
        Template body = Template.parse(t.request().body(), "b", Template.BODY, java.util.Set.of("value"));
        // one pass: the key's placeholders first (the runner), then the write's (the writer)
        String forRun = Template.expand(t.request().body(), "conformance/abc/pause");
        assertEquals("{\"value\": \"{value}\", \"token\": {token}, \"job\": \"conformance-abc-pause\"}",
                forRun);
        assertEquals("{\"value\": \"w1.t7-{token}\", \"token\": 7, \"job\": \"{id}\"}",
                body.render(java.util.Map.of("value", "w1.t7-{token}", "token", "7")), "a value is never expanded");
        // the defaults are what the suite always sent: a plain-text PUT of the value to /{key}
        Target d = Target.parse("proxy: {url: x}\nread: {directory: /d}\n", "t.yaml");
        assertEquals(Target.Request.DEFAULT, d.request());
        assertEquals("/{key}", d.proxyPath());
    }

    @Test
    void aRouteDescriptionsMistakesAreLocated() {
        String base = "proxy:\n  url: http://127.0.0.1:8080\n";
        String read = "read: {directory: /d}\n";
        for (String[] c : new String[][] {
                {base + "  body: '{\"v\": \"x\", \"token\": {token}}'\n" + read,
                        "t.yaml: proxy.body: '{\"v\": \"x\", \"token\": {token}}' has no {value}"},
                {base + "  body: '{\"value\": \"{valeu}\"}'\n" + read,
                        "t.yaml: proxy.body: unknown placeholder {valeu} at character 12"},
                {base + "  path: /jobs/{job}\n" + read, "t.yaml: proxy.path: unknown placeholder {job} at character 7"},
                {base + "  path: /jobs/latest\n" + read, "t.yaml: proxy.path: '/jobs/latest' has no placeholder of"},
                {base + "  method: DELETE\n" + read, "t.yaml: proxy.method 'DELETE' is not a write with a body"},
                {base + "  content-type: \"a\\nb\"\n" + read, "t.yaml: proxy.content-type"},
                {base + "read: {url: http://s, path: '/jobs/{value}'}\n",
                        "t.yaml: read.path: unknown placeholder {value} at character 7"},
                {base + "read: {jdbc: 'jdbc:postgresql://h/d', sql: 'select 1 where ? = 1', param: job}\n",
                        "t.yaml: read.param: 'job' has no placeholder of {id}, {key}"},
                {base + "read: {url: http://s, param: '{id}'}\n", "t.yaml: read.param is the SQL parameter"},
                {base + "read: {url: http://s, json: value}\n", "t.yaml: read.json 'value' is not a JSON Pointer"},
                {base + read + "control: {directory: /d, method: POST}\n", "t.yaml: control.method is for a url"},
                {base + read + "control: {url: http://s, path: '/{kye}'}\n",
                        "t.yaml: control.path: unknown placeholder {kye}"},
                {base + "read: {directory: /d, json: /v, path-style: x, method: PUT}\n", "unknown key 'read.method'"},
                {base + "read: {url: http://s, path: /jobs/{id}}\n", "t.yaml: not valid YAML"},
        }) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Target.parse(c[0],
                    "t.yaml"), c[0]);
            assertTrue(e.getMessage().startsWith(c[1]) || e.getMessage().contains(c[1]), e.getMessage());
        }
    }

    @Test
    void badArgumentsExitWith2() {
        assertEquals(2, Main.run(new String[] {"--nope"}));
        assertEquals(2, Main.run(new String[0]));
    }

    @Test
    void anS3TargetWithStoreAndSdkLeasesIsRead() {
        Target t = Target.parse("""
                name: s3
                proxy: {url: "http://127.0.0.1:8080", path: "/b/{key}", access-key: app, secret-key: "s:e/c"}
                read: {s3: "http://127.0.0.1:9000/", bucket: b, access-key: up, secret-key: upsecret}
                control: {s3: "http://127.0.0.1:9000", bucket: b, access-key: up, secret-key: upsecret}
                store: {launch: [/usr/bin/etcd, --data-dir, /tmp/d], ready: "127.0.0.1:2379"}
                lease: {provider: etcd, etcd: "http://127.0.0.1:2379", ttl: 2s}
                """, "t.yaml");
        assertEquals("app", t.proxySigner().accessKey());
        assertEquals("us-east-1", t.proxySigner().region());
        assertTrue(t.reader().describe().startsWith("s3 http://127.0.0.1:9000 bucket b"), t.reader().describe());
        assertEquals("127.0.0.1:2379", t.store().ready());
        assertEquals("etcd:http://127.0.0.1:2379", t.leaseProvider());
        assertThrows(IllegalArgumentException.class, () -> Target.parse(
                "proxy: {url: x}\nread: {directory: /d}\nlease: {provider: etcd}\n", "t.yaml"));
        assertThrows(IllegalArgumentException.class, () -> Target.parse(
                "proxy: {url: x}\nread: {directory: /d}\ncontrol: {s3: http://h, bucket: b}\n", "t.yaml"));
        assertThrows(IllegalArgumentException.class, () -> Target.parse(
                "proxy: {url: x, access-key: a}\nread: {directory: /d}\n", "t.yaml"));
        assertThrows(IllegalArgumentException.class, () -> Target.parse(
                "proxy: {url: x}\nread: {directory: /d}\nstore: {ready: h:1}\n", "t.yaml"));
    }

    @Test
    void redisLeasesComeFromTheTargetFileOrFromDashDashLease() throws Exception {
        Target t = Target.parse("""
                proxy: {url: "http://127.0.0.1:8080"}
                read: {directory: /d}
                lease: {provider: redis, redis: "redis://127.0.0.1:6379/1", ttl: 1s}
                """, "t.yaml");
        assertEquals("redis:redis://127.0.0.1:6379/1", t.leaseProvider());
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class, () -> Target.parse(
                "proxy: {url: x}\nread: {directory: /d}\nlease: {provider: redis}\n", "t.yaml"));
        assertTrue(missing.getMessage().contains("lease.provider redis needs lease.redis"), missing.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Target.parse(
                "proxy: {url: x}\nread: {directory: /d}\nlease: {provider: redis, redis: \"http://h:1\"}\n", "t.yaml"));

        Target counter = Target.parse("proxy: {url: x}\nread: {directory: /d}\n", "t.yaml");
        assertEquals("redis:rediss://h:6380", counter.withLeaseProvider("rediss://h:6380").leaseProvider());
        assertEquals("etcd:http://e:2379", counter.withLeaseProvider("etcd:http://e:2379").leaseProvider());
        assertEquals("counter", t.withLeaseProvider("counter").leaseProvider());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> counter.withLeaseProvider("mongodb://app:secret@h"));
        assertTrue(bad.getMessage().startsWith("--lease: ") && bad.getMessage().contains("redis://host:port")
                && !bad.getMessage().contains("secret"), bad.getMessage());

        // ZooKeeper: an ensemble as host:port pairs; a URL is not one
        assertEquals("zookeeper:zk-0:2181,zk-1:2181", counter.withLeaseProvider("zookeeper:zk-0:2181,zk-1:2181")
                .leaseProvider());
        assertEquals("zookeeper:127.0.0.1:2181", Target.parse("""
                proxy: {url: x}
                read: {directory: /d}
                lease: {provider: zookeeper, zookeeper: "127.0.0.1:2181", ttl: 1s}
                """, "t.yaml").leaseProvider());
        IllegalArgumentException zkUrl = assertThrows(IllegalArgumentException.class,
                () -> counter.withLeaseProvider("zookeeper://zk:2181"));
        assertTrue(zkUrl.getMessage().contains("zookeeper:<host:port,...>"), zkUrl.getMessage());
        IllegalArgumentException zkMissing = assertThrows(IllegalArgumentException.class, () -> Target.parse(
                "proxy: {url: x}\nread: {directory: /d}\nlease: {provider: zookeeper}\n", "t.yaml"));
        assertTrue(zkMissing.getMessage().contains("lease.provider zookeeper needs lease.zookeeper"),
                zkMissing.getMessage());

        // DynamoDB: a table, a region, optionally an endpoint; credentials never in the file
        assertEquals("dynamodb:stockade-locks,eu-west-1", counter.withLeaseProvider("dynamodb:stockade-locks,eu-west-1")
                .leaseProvider());
        assertEquals("dynamodb:locks,us-east-1,http://127.0.0.1:8000", Target.parse("""
                proxy: {url: x}
                read: {directory: /d}
                lease: {provider: dynamodb, dynamodb: locks, dynamodb-region: us-east-1,
                        dynamodb-endpoint: "http://127.0.0.1:8000", ttl: 1s}
                """, "t.yaml").leaseProvider());
        for (String wrong : List.of("dynamodb:locks", "dynamodb:x,eu-west-1", "dynamodb:locks,Europe",
                "dynamodb:locks,eu-west-1,ftp://d:8000")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> counter.withLeaseProvider(wrong));
            assertTrue(e.getMessage().contains("dynamodb:<table>,<region>[,<endpoint URL>]"), e.getMessage());
        }
        // Consul: its HTTP API; the ACL token from the environment
        assertEquals("consul:http://127.0.0.1:8500", Target.parse("""
                proxy: {url: x}
                read: {directory: /d}
                lease: {provider: consul, consul: "http://127.0.0.1:8500", ttl: 10s}
                """, "t.yaml").leaseProvider());
        IllegalArgumentException consulPath = assertThrows(IllegalArgumentException.class,
                () -> counter.withLeaseProvider("consul:http://c:8500/v1/kv"));
        assertTrue(consulPath.getMessage().contains("consul:<http(s)://host:port>"), consulPath.getMessage());
        IllegalArgumentException noRegion = assertThrows(IllegalArgumentException.class, () -> Target.parse(
                "proxy: {url: x}\nread: {directory: /d}\nlease: {provider: dynamodb, dynamodb: locks}\n", "t.yaml"));
        assertTrue(noRegion.getMessage().contains("lease.dynamodb-region"), noRegion.getMessage());
        IllegalArgumentException keys = assertThrows(IllegalArgumentException.class, () -> Target.parse(
                "proxy: {url: x}\nread: {directory: /d}\nlease: {provider: dynamodb, dynamodb: locks,"
                        + " dynamodb-region: eu-west-1, secret-key: s}\n", "t.yaml"));
        assertTrue(keys.getMessage().contains("secret-key"), keys.getMessage());

        Path file = Files.createTempFile("target", ".yaml");
        Files.writeString(file, "proxy: {url: x}\nread: {directory: /d}\n");
        assertEquals(2, Main.run(new String[] {"--target", file.toString(), "--lease", "mongodb://h"}));
        Files.delete(file);
    }
}

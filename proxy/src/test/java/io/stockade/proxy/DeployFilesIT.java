package io.stockade.proxy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.stockade.policy.ServerConfig;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The files in {@code deploy/} say what they do: every manifest parses, every embedded policy file validates
 * with the project's own loader, and every metric the alert rules and the dashboard use exists in a real
 * {@code /metrics} scrape after a load that makes each kind of event happen.
 */
class DeployFilesIT {
    static final Path DEPLOY = Path.of("../deploy");
    static final Pattern METRIC = Pattern.compile("\\bstockade_[a-z0-9_]+");

    @TempDir
    Path dir;

    @Test
    void everyManifestParses() throws IOException {
        List<Path> files = files(".yaml", ".yml");
        assertFalse(files.isEmpty());
        for (Path file : files) {
            List<Object> docs = new ArrayList<>();
            new Yaml(new SafeConstructor(new LoaderOptions())).loadAll(Files.readString(file)).forEach(docs::add);
            assertFalse(docs.isEmpty(), file + " holds no document");
        }
        for (Path file : files(".json")) {
            // JSON is YAML: a parse error here is a broken dashboard
            new Yaml(new SafeConstructor(new LoaderOptions())).load(Files.readString(file));
        }
    }

    @Test
    void theKubernetesPrometheusRuleCarriesExactlyTheAlertRules() throws IOException {
        Yaml yaml = new Yaml(new SafeConstructor(new LoaderOptions()));
        Map<?, ?> alerts = yaml.load(Files.readString(DEPLOY.resolve("prometheus/alerts.yaml")));
        Map<?, ?> rule = yaml.load(Files.readString(DEPLOY.resolve("k8s/base/prometheusrule.yaml")));
        assertEquals(alerts.get("groups"), ((Map<?, ?>) rule.get("spec")).get("groups"),
                "deploy/k8s/base/prometheusrule.yaml must carry the groups of deploy/prometheus/alerts.yaml");
    }

    /**
     * The kustomize base keeps /metrics and the admin API off the port writers reach: the policies put them on a
     * management listener, the Deployment names that port, a Service of its own exposes it (the writers' Service
     * exposes the data port only) and the ServiceMonitor scrapes it there.
     */
    @Test
    void theKubernetesBaseScrapesTheManagementListenerAndWritersReachOnlyTheDataPort() throws Exception {
        Yaml yaml = new Yaml(new SafeConstructor(new LoaderOptions()));
        Path base = DEPLOY.resolve("k8s/base");
        ServerConfig server = PolicyLoader.parse(Files.readString(base.resolve("stockade.yaml")),
                Path.of("stockade.yaml"), Map.of()).server();
        assertTrue(server.management() != null && server.management().port() != server.port(),
                "stockade.yaml sets server.management.port");
        Map<?, ?> deployment = yaml.load(Files.readString(base.resolve("deployment.yaml")));
        Map<?, ?> container = (Map<?, ?>) ((List<?>) path(deployment, "spec", "template", "spec", "containers"))
                .getFirst();
        Map<String, Object> ports = new HashMap<>();
        for (Object port : (List<?>) container.get("ports")) {
            ports.put(String.valueOf(((Map<?, ?>) port).get("name")), ((Map<?, ?>) port).get("containerPort"));
        }
        assertEquals(Map.of("http", server.port(), "management", server.management().port()), ports);
        Map<String, Map<?, ?>> services = new HashMap<>();
        for (Object doc : yaml.loadAll(Files.readString(base.resolve("service.yaml")))) {
            services.put(String.valueOf(path((Map<?, ?>) doc, "metadata", "name")), (Map<?, ?>) doc);
        }
        assertEquals(List.of("http"), targetPorts(services.get("stockade")), "writers' Service: the data port only");
        Map<?, ?> management = services.get("stockade-management");
        assertEquals(List.of("management"), targetPorts(management));
        Map<?, ?> monitor = yaml.load(Files.readString(base.resolve("servicemonitor.yaml")));
        Map<?, ?> wanted = (Map<?, ?>) path(monitor, "spec", "selector", "matchLabels");
        Map<?, ?> labels = (Map<?, ?>) path(management, "metadata", "labels");
        for (Map.Entry<?, ?> label : wanted.entrySet()) {
            // the kustomization adds app.kubernetes.io/name to every resource
            assertTrue(label.getKey().equals("app.kubernetes.io/name") || label.getValue().equals(
                    labels.get(label.getKey())), "the ServiceMonitor selects stockade-management: " + label);
        }
        assertFalse(String.valueOf(path(services.get("stockade"), "metadata")).contains("management"),
                "the ServiceMonitor must not select the writers' Service");
        Map<?, ?> endpoint = (Map<?, ?>) ((List<?>) path(monitor, "spec", "endpoints")).getFirst();
        assertEquals("management", endpoint.get("port"));
        assertEquals("/metrics", endpoint.get("path"));
    }

    private static Object path(Map<?, ?> map, String... keys) {
        Object at = map;
        for (String key : keys) {
            at = ((Map<?, ?>) at).get(key);
        }
        return at;
    }

    private static List<?> targetPorts(Map<?, ?> service) {
        return ((List<?>) path(service, "spec", "ports")).stream().map(p -> (Object) ((Map<?, ?>) p).get("targetPort"))
                .toList();
    }

    @Test
    void embeddedPoliciesValidateWithTheLoader() throws Exception {
        List<String> policies = new ArrayList<>();
        policies.add(Files.readString(DEPLOY.resolve("compose/stockade.yaml")));
        for (Path file : files(".yaml")) {
            for (Object doc : new Yaml(new SafeConstructor(new LoaderOptions())).loadAll(Files.readString(file))) {
                if (doc instanceof Map<?, ?> m && "ConfigMap".equals(m.get("kind"))
                        && m.get("data") instanceof Map<?, ?> data
                        && data.get("stockade.yaml") instanceof String text) {
                    policies.add(text);
                }
            }
        }
        policies.addAll(generatedConfigMapPolicies());
        assertTrue(policies.size() >= 2, "compose and the kustomize base ship policies: " + policies.size());
        for (String text : policies) {
            PolicyLoader.parse(text, Path.of("embedded.yaml"), Map.of("POD_NAME", "stockade-0"));
        }
    }

    /**
     * The kustomize base ships its policies through a {@code configMapGenerator} (a hash-suffixed name, so an edit
     * rolls the pods): every generated ConfigMap's {@code stockade.yaml} is read from its file, and the Deployment
     * mounts a ConfigMap of that generator's name (kustomize rewrites the reference to the hashed name).
     */
    private static List<String> generatedConfigMapPolicies() throws IOException {
        List<String> policies = new ArrayList<>();
        for (Path kustomization : files("kustomization.yaml")) {
            Map<?, ?> k = new Yaml(new SafeConstructor(new LoaderOptions())).load(Files.readString(kustomization));
            if (!(k.get("configMapGenerator") instanceof List<?> generators)) {
                continue;
            }
            assertTrue(!(k.get("resources") instanceof List<?> resources) || resources.stream()
                    .noneMatch(r -> String.valueOf(r).contains("configmap")),
                    kustomization + ": the policies come from the generator, not a hand-written ConfigMap too");
            String deployment = Files.readString(kustomization.resolveSibling("deployment.yaml"));
            for (Object g : generators) {
                Map<?, ?> generator = (Map<?, ?>) g;
                assertTrue(deployment.contains("name: " + generator.get("name")),
                        kustomization + ": deployment.yaml mounts the generated ConfigMap " + generator.get("name"));
                for (Object f : (List<?>) generator.get("files")) {
                    Path file = kustomization.resolveSibling(String.valueOf(f));
                    if (file.getFileName().toString().equals("stockade.yaml")) {
                        policies.add(Files.readString(file));
                    }
                }
            }
        }
        assertTrue(!policies.isEmpty(), "deploy/k8s/base generates the stockade-policies ConfigMap from stockade.yaml");
        return policies;
    }

    @Test
    void everyMetricInTheAlertsAndTheDashboardExistsInARealScrape() throws Exception {
        Set<String> used = new TreeSet<>();
        used.addAll(metricNames(DEPLOY.resolve("prometheus/alerts.yaml")));
        used.addAll(metricNames(DEPLOY.resolve("grafana/stockade-dashboard.json")));
        assertTrue(used.size() >= 8, "the rules and the dashboard should use the proxy's metrics: " + used);

        String scrape = scrapeAfterLoad();
        Set<String> missing = new TreeSet<>();
        for (String name : used) {
            if (!Pattern.compile("(?m)^" + name + "[{ ]").matcher(scrape).find()) {
                missing.add(name);
            }
        }
        assertTrue(missing.isEmpty(), "metrics used by deploy/ but absent from /metrics: " + missing);
    }

    /**
     * The shipped alert rules, checked and unit-tested by Prometheus's own promtool: every kind of outage a write can
     * meet (the fence store, a postgres backend's database, a verifier, an http upstream, an S3 store, the memory
     * store's bound) fires an alert ({@code deploy/prometheus/alerts.test.yaml}); OutageMetricsIT drives each
     * outage against a real proxy and sees the metrics those rules read move.
     */
    @Test
    void theAlertRulesPassPromtoolsCheckAndUnitTests() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.PROMTOOL);
        String promtool = io.stockade.testing.Tools.binary("promtool").orElseThrow().toString();
        for (List<String> command : List.of(
                List.of(promtool, "check", "rules", DEPLOY.resolve("prometheus/alerts.yaml").toString()),
                List.of(promtool, "test", "rules", DEPLOY.resolve("prometheus/alerts.test.yaml").toString()))) {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            assertTrue(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), "promtool hung");
            assertEquals(0, p.exitValue(), String.join(" ", command) + ":\n" + out);
        }
    }

    /**
     * The image's HEALTHCHECK command, run against a real proxy (its port for 8080). It asked in HTTP/1.0, which the
     * proxy never answered (and now answers 505): the container could never become healthy.
     */
    @Test
    void theDockerHealthCheckPassesAgainstARealProxy() throws Exception {
        String dockerfile = Files.readString(DEPLOY.resolve("Dockerfile"));
        Matcher m = Pattern.compile("HEALTHCHECK[^\\n]*\\\\\\n\\s*CMD bash -c '([^']*)'").matcher(dockerfile);
        assertTrue(m.find(), "a HEALTHCHECK CMD bash -c '...' in deploy/Dockerfile");
        String yaml = """
                store:
                  type: memory
                  journal: ${JOURNAL}
                policies:
                  - name: docs
                    match: {path: "/docs/{id}"}
                    scope: docs/{id}
                    backend: {type: file, root: "${ROOT}"}
                """;
        try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("hc"), yaml,
                Map.of("ROOT", dir.resolve("r").toString()))) {
            String script = m.group(1).replace("/127.0.0.1/8080", "/127.0.0.1/" + proxy.server().port());
            Process check = new ProcessBuilder("bash", "-c", script).redirectErrorStream(true).start();
            assertTrue(check.waitFor(10, java.util.concurrent.TimeUnit.SECONDS), "the health check hung");
            assertEquals(0, check.exitValue(), script + ": " + new String(check.getInputStream().readAllBytes()));
        }
    }

    /** A load in which each kind of event happens once: accept, handoff, stale, timeout, store failure. */
    private String scrapeAfterLoad() throws Exception {
        // The timeout leaves a cold JVM on a loaded machine room for its first write (200 ms did not: 600 ms seen).
        String yaml = TestPolicies.docsOverHttp("timeout: 1500ms", "settle: 100ms");
        try (TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml,
                     Map.of("UPSTREAM", upstream.baseUri().toString()))) {
            Thread.sleep(150);
            assertEquals(201, Http.put(proxy.uri("/docs/a"), "1", Map.of("Fencing-Token", "1")).status());
            assertEquals(204, Http.put(proxy.uri("/docs/a"), "5", Map.of("Fencing-Token", "5")).status());
            assertEquals(409, Http.put(proxy.uri("/docs/a"), "2", Map.of("Fencing-Token", "2")).status());
            upstream.delayWrites(Duration.ofMillis(2500));
            assertEquals(504, Http.put(proxy.uri("/docs/b"), "b", Map.of("Fencing-Token", "1")).status());
            upstream.delayWrites(Duration.ZERO);
            assertEquals(503, Http.put(proxy.uri("/docs/b"), "b", Map.of("Fencing-Token", "2")).status());
            proxy.server().store().close();
            assertEquals(503, Http.put(proxy.uri("/docs/c"), "c", Map.of("Fencing-Token", "1")).status());
            Http.Response metrics = Http.get(proxy.uri("/metrics"));
            assertEquals(200, metrics.status());
            return metrics.body();
        }
    }

    private static Set<String> metricNames(Path file) throws IOException {
        Set<String> names = new TreeSet<>();
        Matcher m = METRIC.matcher(Files.readString(file));
        while (m.find()) {
            names.add(m.group());
        }
        return names;
    }

    private static List<Path> files(String... suffixes) throws IOException {
        try (Stream<Path> walk = Files.walk(DEPLOY)) {
            return walk.filter(Files::isRegularFile)
                    .filter(p -> Stream.of(suffixes).anyMatch(s -> p.toString().endsWith(s)))
                    .sorted()
                    .toList();
        }
    }
}

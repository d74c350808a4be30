package io.stockade.client;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The holder that will be paused (run by {@link ZombieIT} as its own JVM): takes the lease, writes once through the
 * proxy, then waits for "GO" on stdin — by then it has been SIGSTOPped past its TTL and continued — and tries the
 * point of no return before writing again; finally it forces a write with its old token.
 *
 * <p>Args: JDBC_URL LEASE_NAME PROXY_BASE_URL
 */
final class ZombieWriter {

    private ZombieWriter() {
    }

    public static void main(String[] args) throws Exception {
        String jdbc = args[0];
        String name = args[1];
        URI file = URI.create(args[2] + "/files/" + name);
        HttpClient plain = HttpClient.newHttpClient();
        try (LeaseProvider leases = Leases.newBuilder().holderIdentity("zombie").postgres(jdbc)) {
            Lease lease = leases.acquire(name, Duration.ofSeconds(2), Duration.ofSeconds(10));
            lease.addListener((l, reason) -> System.out.println("LISTENER " + reason));
            HttpClient fenced = FencedHttpClient.of(plain, lease, Duration.ofMillis(500));
            System.out.println("TOKEN " + lease.token());
            HttpResponse<String> first = fenced.send(HttpRequest.newBuilder(file)
                    .PUT(HttpRequest.BodyPublishers.ofString("zombie-1")).build(), HttpResponse.BodyHandlers.ofString());
            System.out.println("WROTE " + first.statusCode());
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine(); // "GO"
            try {
                lease.checkpoint(Duration.ofMillis(500));
                System.out.println("CHECKPOINT passed");
            } catch (LeaseLostException e) {
                System.out.println("CHECKPOINT threw " + e.reason());
            }
            try {
                fenced.send(HttpRequest.newBuilder(file).PUT(HttpRequest.BodyPublishers.ofString("zombie-2")).build(),
                        HttpResponse.BodyHandlers.ofString());
                System.out.println("FENCED-CLIENT sent");
            } catch (LeaseLostException e) {
                System.out.println("FENCED-CLIENT refused " + e.reason());
            }
            // the write a buggy or careless holder would make anyway, with its old token
            HttpResponse<String> forced = plain.send(HttpRequest.newBuilder(file)
                    .header("Fencing-Token", Long.toString(lease.token()))
                    .PUT(HttpRequest.BodyPublishers.ofString("zombie-2")).build(), HttpResponse.BodyHandlers.ofString());
            System.out.println("FORCED " + forced.statusCode());
            System.out.flush();
        }
    }
}

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
 * point of no return before writing again; finally it forces a write with its old token, and once more when the
 * next stdin line is "AGAIN".
 *
 * <p>Args: LOCK_SERVICE NAME PROXY_BASE_URL [LEASE_PREFIX]: a JDBC URL (PostgreSQL) or a {@code redis://} URL; the
 * file written is {@code /files/NAME}, the lease {@code LEASE_PREFIX + NAME} (default: {@code NAME}).
 */
final class ZombieWriter {

    private ZombieWriter() {
    }

    public static void main(String[] args) throws Exception {
        String service = args[0];
        String name = args[1];
        URI file = URI.create(args[2] + "/files/" + name);
        String leaseName = (args.length > 3 ? args[3] : "") + name;
        HttpClient plain = HttpClient.newHttpClient();
        Leases.Builder builder = Leases.newBuilder().holderIdentity("zombie");
        try (LeaseProvider leases = service.startsWith("redis") ? builder.redis(service) : builder.postgres(service)) {
            Lease lease = leases.acquire(leaseName, Duration.ofSeconds(2), Duration.ofSeconds(10));
            lease.addListener((l, reason) -> System.out.println("LISTENER " + reason));
            HttpClient fenced = FencedHttpClient.of(plain, lease, Duration.ofMillis(500));
            System.out.println("TOKEN " + lease.token());
            HttpResponse<String> first = fenced.send(HttpRequest.newBuilder(file)
                    .PUT(HttpRequest.BodyPublishers.ofString("zombie-1")).build(),
                    HttpResponse.BodyHandlers.ofString());
            System.out.println("WROTE " + first.statusCode());
            BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            stdin.readLine(); // "GO"
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
                    .PUT(HttpRequest.BodyPublishers.ofString("zombie-2")).build(),
                    HttpResponse.BodyHandlers.ofString());
            System.out.println("FORCED " + forced.statusCode());
            System.out.flush();
            if ("AGAIN".equals(stdin.readLine())) {
                HttpResponse<String> again = plain.send(HttpRequest.newBuilder(file)
                        .header("Fencing-Token", Long.toString(lease.token()))
                        .PUT(HttpRequest.BodyPublishers.ofString("zombie-3")).build(),
                        HttpResponse.BodyHandlers.ofString());
                System.out.println("FORCED-AGAIN " + again.statusCode());
                System.out.flush();
            }
        }
    }
}

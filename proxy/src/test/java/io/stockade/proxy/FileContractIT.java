package io.stockade.proxy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The contract through the file backend: what landed is read from the directory itself. */
class FileContractIT extends ContractIT {
    Path root;

    @Override
    String backendYaml() {
        return "    backend:\n      type: file\n      root: ${ROOT}\n";
    }

    @Override
    Map<String, String> startStorage() {
        root = dir.resolve("root");
        return Map.of("ROOT", root.toString());
    }

    @Override
    void stopStorage() {
    }

    @Test
    void theTokenBesideTheDataKeepsTheFenceWhenTheJournalIsLost() throws Exception {
        assert2xx(put("/docs/a", "v5", "5"));
        proxy.close();
        deleteTree(dir.resolve("journal"));
        proxy = ProxyFixture.start(dir.resolve("journal"), policyYaml(), vars);

        Http.Response zombie = put("/docs/a", "v3", "3");
        assertEquals(409, zombie.status(), zombie.body());
        assertTrue(zombie.body().contains("\"highest\":5"), zombie.body());
        assertEquals(Optional.of("v5"), stored("/docs/a"));
        // the store was lifted to the sidecar's token: the next zombie is refused before the backend
        assertEquals(5, proxy.server().store().get("docs/a").orElseThrow().token());
    }

    private static void deleteTree(Path path) throws Exception {
        try (var walk = Files.walk(path)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    @Override
    Optional<String> stored(String path) throws Exception {
        Path file = root.resolve(path.substring(1));
        return Files.isRegularFile(file) ? Optional.of(Files.readString(file)) : Optional.empty();
    }
}

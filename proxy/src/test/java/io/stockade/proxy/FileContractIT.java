package io.stockade.proxy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

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

    @Override
    Optional<String> stored(String path) throws Exception {
        Path file = root.resolve(path.substring(1));
        return Files.isRegularFile(file) ? Optional.of(Files.readString(file)) : Optional.empty();
    }
}

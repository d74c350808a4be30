package io.stockade.policy;

import java.nio.file.Path;
import java.util.Optional;

/** Reads the {@code store} block. */
final class StoreReader {

    private StoreReader() {
    }

    static Optional<StoreConfig> read(Field field) {
        // each store type gets its own method and key list
        return field.mapping().flatMap(store -> store
                .required("type", type -> Values.keyword(type, "store type", Vocabulary.STORE_TYPES))
                .flatMap(type -> type.equals("postgres") ? postgres(store) : memory(store)));
    }

    private static Optional<StoreConfig> postgres(Mapping store) {
        store.allowOnly(Vocabulary.POSTGRES_STORE_KEYS);
        Optional<Datasource> datasource = store.required("datasource", DatasourceReader::read);
        Optional<Boolean> migrate = store.optional("migrate", Values::bool, true);
        if (!Values.allPresent(datasource, migrate)) {
            return Optional.empty();
        }
        return Optional.of(new StoreConfig.Postgres(datasource.get(), migrate.get()));
    }

    private static Optional<StoreConfig> memory(Mapping store) {
        store.allowOnly(Vocabulary.MEMORY_STORE_KEYS);
        Optional<Path> journal = store.required("journal", Values::path);
        Optional<Long> compactAfter = store.optional("compact-after", Values::size,
                StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES);
        if (!Values.allPresent(journal, compactAfter)) {
            return Optional.empty();
        }
        return Optional.of(new StoreConfig.Memory(journal.get(), compactAfter.get()));
    }
}

package io.stockade.proxy.store.memory;

import java.nio.file.Path;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.Advance;

/**
 * Child process of {@link JournalCrashTest}: a few threads raise their own scope with increasing tokens, forever,
 * and print {@code "<scope> <token>"} after each {@code advance} returns. The parent kills it with SIGKILL.
 */
public final class JournalCrashChild {

    static final int THREADS = 4;

    private JournalCrashChild() {
    }

    public static void main(String[] args) throws Exception {
        // A small threshold, so that some kills land during a compaction.
        MemoryFenceStore store = MemoryFenceStore.open(new StoreConfig.Memory(Path.of(args[0]), 8 * 1024));
        for (int i = 0; i < THREADS; i++) {
            String scope = "crash-" + i;
            Thread.ofPlatform().start(() -> {
                try {
                    for (long token = 0; ; token++) {
                        if (!(store.advance(scope, token, false) instanceof Advance.Accepted)) {
                            throw new AssertionError(scope + " " + token + " refused");
                        }
                        synchronized (System.out) {
                            System.out.println(scope + " " + token);
                            System.out.flush();
                        }
                    }
                } catch (Throwable t) {
                    t.printStackTrace();
                    System.exit(2);
                }
            });
        }
    }
}
